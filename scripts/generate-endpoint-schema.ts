/**
 * Writes runtime/python/svc/_schema.py from core/endpoint-schema.ts, so the Python SDK checks
 * `Endpoint(...)` with the same rules, bounds, GPU list and messages as the build and the platform.
 * Run `npx tsx scripts/generate-endpoint-schema.ts` after changing the schema;
 * test/core/endpoint-schema.test.ts fails while the generated file is out of date.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  ENDPOINT_ARGUMENTS,
  ENDPOINT_DEFAULTS,
  ENDPOINT_LIMITS,
  ENDPOINT_MESSAGES,
  GPU_GROUPS,
  HTTP_METHODS,
  RESERVED_PATHS,
  SCALER_TYPES,
} from "../core/endpoint-schema.ts";

export const PYTHON_SCHEMA_FILE = fileURLToPath(new URL("../runtime/python/svc/_schema.py", import.meta.url));

/** A JSON value as a Python literal (JSON and Python agree on strings and numbers; not on the rest). */
function py(value: unknown): string {
  if (value === null) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (Array.isArray(value)) return `(${value.map(py).join(", ")}${value.length === 1 ? "," : ""})`;
  if (typeof value === "object")
    return `{${Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => `${JSON.stringify(k)}: ${py(v)}`)
      .join(", ")}}`;
  return JSON.stringify(value);
}

export function renderPythonSchema(): string {
  const lines = [
    '"""The `Endpoint(...)` argument rules. GENERATED from core/endpoint-schema.ts by',
    "scripts/generate-endpoint-schema.ts: do not edit, change the schema and run the script.",
    '"""',
    "from enum import Enum",
    "",
    `ENDPOINT_ARGUMENTS = ${py(ENDPOINT_ARGUMENTS)}`,
    `GPU_GROUPS = ${py(GPU_GROUPS)}`,
    `SCALER_TYPES = ${py(SCALER_TYPES)}`,
    `HTTP_METHODS = ${py(HTTP_METHODS)}`,
    `RESERVED_PATHS = ${py(RESERVED_PATHS)}`,
    "",
    ...Object.entries(ENDPOINT_LIMITS).map(([key, value]) => `${snake(key).toUpperCase()} = ${py(value)}`),
    "",
    ...Object.entries(ENDPOINT_DEFAULTS).map(([key, value]) => `DEFAULT_${snake(key).toUpperCase()} = ${py(value)}`),
    "",
    "# One message per rule; {got} is the value given.",
    "MESSAGES = {",
    ...Object.entries(ENDPOINT_MESSAGES).map(([key, value]) => `    ${JSON.stringify(key)}: ${JSON.stringify(value)},`),
    "}",
    "",
    "",
    "class GpuGroup(str, Enum):",
    '    """A GPU tier. The value is the member name, so `GpuGroup.ADA_24 == "ADA_24"`."""',
    "",
    ...GPU_GROUPS.map((group) => `    ${group} = ${JSON.stringify(group)}`),
    "",
    '    def __str__(self) -> str:  # str(GpuGroup.ADA_24) == "ADA_24", not "GpuGroup.ADA_24"',
    "        return self.value",
    "",
  ];
  return lines.join("\n");
}

const snake = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(PYTHON_SCHEMA_FILE, renderPythonSchema());
  console.log(`wrote ${PYTHON_SCHEMA_FILE}`);
}
