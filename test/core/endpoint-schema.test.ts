/**
 * The one Endpoint schema (core/endpoint-schema.ts) drives three checks: the build's, the Python
 * SDK's (runtime/python/svc/_schema.py, generated) and the platform's input check. These tests keep
 * the generated file current and show the three refuse and accept the same values.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { EndpointArgumentError, GPU_GROUPS, normaliseEndpointArguments } from "../../core/endpoint-schema.ts";
import type { StaticValue } from "../../core/types.ts";
import { endpointInputSchema } from "../../platform/graphql/inputs.ts";
import { PYTHON_SCHEMA_FILE, renderPythonSchema } from "../../scripts/generate-endpoint-schema.ts";

const RUNTIME = fileURLToPath(new URL("../../runtime/python", import.meta.url));

/** Argument sets around every bound; each side must agree on accept / refuse and on the message. */
const CASES: Array<Record<string, StaticValue>> = [
  {},
  { execution_timeout: 2 },
  { execution_timeout: 5 },
  { execution_timeout: 604_800 },
  { execution_timeout: 1_000_000 },
  { execution_timeout: 30.5 },
  { workers: [0, 100] },
  { workers: [0, 101] },
  { workers: [3, 1] },
  { workers: "many" },
  { idle_timeout: 86_400 },
  { idle_timeout: 86_401 },
  { idle_timeout: 2.5 },
  { scaler_value: 0 },
  { scaler_value: -1 },
  { scaler_value: 10_001 },
  { gpu: "ADA_24", gpu_count: 8 },
  { gpu: "ADA_24", gpu_count: 9 },
  { gpu_count: 2 },
  { gpu: "H100" },
  { gpu: ["ADA_24", "AMPERE_16", "AMPERE_24", "AMPERE_48"] },
  { cpu: "cpu5c-4-8" },
  { cpu: "bad flavour" },
  { env: { GOOD: "1" } },
  { env: { "1BAD": "x" } },
  { dependencies: "pillow" },
  { flashboot: "yes" },
];

const tsVerdict = (args: Record<string, StaticValue>): string => {
  try {
    normaliseEndpointArguments({ name: "w", ...args }, "QB");
    return "ok";
  } catch (error) {
    if (!(error instanceof EndpointArgumentError)) throw error;
    return error.rule;
  }
};

describe("the one Endpoint schema", () => {
  it("runtime/python/svc/_schema.py is generated from it and up to date (npx tsx scripts/generate-endpoint-schema.ts)", () => {
    expect(readFileSync(PYTHON_SCHEMA_FILE, "utf8")).toBe(renderPythonSchema());
  });

  it("the Python SDK accepts and refuses exactly what the build does, with the same message", () => {
    const script = `
import json, sys
from svc._config import build_config
from svc import _schema
out = []
for args in json.load(sys.stdin):
    try:
        build_config("w", **args)
        out.append("ok")
    except ValueError as error:
        text = str(error).split("): ", 1)[1]
        rule = [k for k, m in _schema.MESSAGES.items() if text.startswith(m.split("{got}")[0])]
        out.append(rule[-1] if rule else text)
print(json.dumps(out))`;
    const output = execFileSync("python3", ["-c", script], { cwd: RUNTIME, input: JSON.stringify(CASES), encoding: "utf8" });
    expect(JSON.parse(output)).toEqual(CASES.map(tsVerdict));
  });

  it("the platform's endpoint input takes the same bounds (executionTimeoutMs 5 s to 7 days, GPU list)", () => {
    const verdict = (input: Record<string, unknown>) => endpointInputSchema.safeParse({ name: "w", ...input }).success;
    expect(verdict({ executionTimeoutMs: 2_000 })).toBe(false);
    expect(verdict({ executionTimeoutMs: 5_000 })).toBe(true);
    expect(verdict({ executionTimeoutMs: 604_800_000 })).toBe(true);
    expect(verdict({ executionTimeoutMs: 1_000_000_000 })).toBe(false);
    expect(verdict({ workersMax: 101 })).toBe(false);
    expect(verdict({ idleTimeout: 86_401 })).toBe(false);
    expect(verdict({ gpuIds: GPU_GROUPS.join(",").split(",").slice(0, 3).join(",") })).toBe(true);
    expect(verdict({ gpuIds: "H100" })).toBe(false);
    expect(verdict({ gpuCount: 9 })).toBe(false);
  });

  it("every settings object the build makes passes the platform's check", () => {
    for (const args of CASES.filter((c) => tsVerdict(c) === "ok")) {
      const settings = normaliseEndpointArguments({ name: "w", ...args }, "QB");
      const input = {
        name: "w",
        gpuIds: settings.hardware.gpuIds?.join(","),
        gpuCount: settings.hardware.gpuCount,
        instanceIds: settings.hardware.instanceIds,
        ...settings.scaling,
        executionTimeoutMs: settings.executionTimeoutMs,
        env: Object.entries(settings.env).map(([key, value]) => ({ key, value })),
      };
      expect(endpointInputSchema.safeParse(input).success, JSON.stringify(args)).toBe(true);
    }
  });
});
