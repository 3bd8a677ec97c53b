/**
 * The one Endpoint schema (core/endpoint-schema.ts) drives three checks: the build's, the Python
 * SDK's (runtime/python/svc/_schema.py, generated) and the platform's input check. These tests keep
 * the generated file current and show the three refuse and accept the same values.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  ENDPOINT_ARGUMENTS,
  ENDPOINT_LIMITS,
  EndpointArgumentError,
  GPU_GROUPS,
  normaliseEndpointArguments,
  SCALER_TYPES,
} from "../../core/endpoint-schema.ts";
import { manifestEndpointSchema } from "../../core/manifest.ts";
import { PythonParser } from "../../plugins/_python/index.ts";
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
  { schedule: "0 3 * * *" },
  { schedule: "@daily" },
  { schedule: "* * *" },
  { schedule: "*/2 * * * * *" },
  { schedule: "61 * * * *" },
  { schedule: "0 0 * * FUNDAY" },
  { schedule: "*/0 * * * *" },
  { schedule: "5-1 * * * *" },
  { schedule: "@often" },
  { schedule: 5 },
  { retries: 3 },
  { retries: 0 },
  { retries: 11 },
  { retries: -1 },
  { retries: true },
  { retries: { max_retries: 2, backoff: 2, initial_delay: 0.5 } },
  { retries: { max_retries: 2, backoff: 0.5 } },
  { retries: { max_retries: 2, initial_delay: 4000 } },
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
from svc._config import Retries, build_config
from svc import _schema
out = []
for args in json.load(sys.stdin):
    if isinstance(args.get("retries"), dict):  # Retries(...) as discovery reads it
        args["retries"] = Retries(**args["retries"])
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

  it("discovery (the Python helper) names positional arguments from it: every ENDPOINT_ARGUMENTS entry, in order, and no more", async () => {
    const values = [
      '"w"',
      "None",
      '"cpu3c-2-4"',
      "None",
      "(0, 1)",
      "5",
      '"QUEUE_DELAY"',
      "4",
      "600",
      "{}",
      "[]",
      "True",
      '"weights"',
      'Cron("0 3 * * *", input={"n": 1})',
      "Batch(16, 50)",
      "Retries(2, initial_delay=0.5)",
      "False",
      "None", // concurrency (with batch= it would be refused)
    ];
    expect(values).toHaveLength(ENDPOINT_ARGUMENTS.length);
    const file = (args: string[]) => ({
      path: "app.py",
      source: Buffer.from(`from svc import Batch, Cron, Endpoint, Retries\n\n@Endpoint(${args.join(", ")})\ndef f():\n    return 1\n`),
    });
    const parser = new PythonParser();
    try {
      const [named, tooMany] = await parser.parse([file(values), file([...values, "1"])]);
      if (named!.error) throw new Error(named!.error.message);
      expect(Object.keys(named!.functions[0]!.declaration.args)).toEqual([...ENDPOINT_ARGUMENTS]);
      expect(named!.functions[0]!.declaration.args.volume).toBe("weights");
      expect(named!.functions[0]!.declaration.args.schedule).toEqual({ cron: "0 3 * * *", input: { n: 1 } }); // Cron(...) read by name
      expect(named!.functions[0]!.declaration.args.batch).toEqual({ max_size: 16, max_wait_ms: 50 });
      expect(named!.functions[0]!.declaration.args.retries).toEqual({ max_retries: 2, initial_delay: 0.5 }); // Retries(...) read statically
      expect(normaliseEndpointArguments(named!.functions[0]!.declaration.args, "QB").retries).toEqual({ maxRetries: 2, backoff: 2, initialDelayMs: 500 });
      expect(named!.functions[0]!.declaration.args.network).toBe(false);
      expect(tooMany!.error).toMatchObject({
        code: "ENDPOINT_ARGUMENT_INVALID",
        message: expect.stringContaining(`at most ${ENDPOINT_ARGUMENTS.length} positional`),
      });
    } finally {
      parser.close();
    }
  });

  it("concurrency=N: queue-based and not batched, 1 to 256; the build refuses what the SDK refuses", () => {
    expect(() => normaliseEndpointArguments({ name: "c", concurrency: 4 }, "QB")).not.toThrow();
    expect(() => normaliseEndpointArguments({ name: "c", concurrency: 0 }, "QB")).toThrow(/concurrency must be an integer from 1 to 256/);
    expect(() => normaliseEndpointArguments({ name: "c", concurrency: 2 }, "LB")).toThrow(/only a queue-based endpoint .* takes "concurrency"/);
    expect(() => normaliseEndpointArguments({ name: "c", concurrency: 2, batch: { max_size: 4 } }, "QB")).toThrow(/does not apply to a batched endpoint/);
  });

  it("the manifest's endpoint check takes its bounds: the GPU list length, the scaler types, the name pattern", () => {
    const settings = normaliseEndpointArguments({ name: "w", gpu: GPU_GROUPS.slice(0, ENDPOINT_LIMITS.gpuTypes.max) as unknown as StaticValue }, "QB");
    const entry = (change: Record<string, unknown>) => ({
      name: "w",
      type: "QB",
      file: "app.py",
      module: "app",
      handler: "handler_w.py",
      hardware: settings.hardware,
      image: "svc/gpu",
      scaling: settings.scaling,
      executionTimeoutMs: settings.executionTimeoutMs,
      env: {},
      dependencies: [],
      ...change,
    });
    /** The fields the check refuses, but for the functions this entry leaves out. */
    const verdict = (change: Record<string, unknown>) => {
      const result = manifestEndpointSchema.safeParse(entry(change));
      const refused = (result.error?.issues ?? []).map((issue) => issue.path.join(".")).filter((path) => path !== "functions");
      return refused.join(",") || true;
    };
    expect(verdict({})).toBe(true);
    expect(verdict({ hardware: { gpuIds: GPU_GROUPS.slice(0, ENDPOINT_LIMITS.gpuTypes.max + 1) } })).toBe("hardware.gpuIds");
    for (const scalerType of SCALER_TYPES) expect(verdict({ scaling: { ...settings.scaling, scalerType } })).toBe(true);
    expect(verdict({ scaling: { ...settings.scaling, scalerType: "CPU_LOAD" } })).toBe("scaling.scalerType");
    for (const name of ["w-1_x", "-w", "w w"]) expect(verdict({ name })).toBe(normaliseOk(name) ? true : "name");
  });
});

/** What the build's own check says of an endpoint name. */
const normaliseOk = (name: string) => tsVerdict({ name }) === "ok";
