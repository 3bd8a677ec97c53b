import { describe, expect, it } from "vitest";
import { DEFAULT_IMAGES } from "../../core/config.ts";
import type { DiscoveredFunction, EndpointSpec, HttpMethod, StaticValue } from "../../core/types.ts";
import { imageFor } from "../../plugins/gpu-image.ts";
import { groupFunctions } from "../../plugins/group-endpoints.ts";
import { checkRoutes } from "../../plugins/lb-routes.ts";
import { caught } from "./_front-half.ts";

function qb(name: string, args: Record<string, StaticValue>, at: { file?: string; line?: number } = {}): DiscoveredFunction {
  const file = at.file ?? "worker.py";
  const line = at.line ?? 10;
  return {
    name,
    file,
    line: line + 1,
    module: file.replace(/\.py$/, "").replace(/\//g, "."),
    isAsync: false,
    isGenerator: false,
    declaration: { file, line, args },
  };
}

function lb(
  name: string,
  method: HttpMethod,
  path: string,
  args: Record<string, StaticValue>,
  at: { file?: string; declLine?: number; line: number },
): DiscoveredFunction {
  const file = at.file ?? "api.py";
  return {
    name,
    file,
    line: at.line,
    module: file.replace(/\.py$/, ""),
    isAsync: false,
    isGenerator: false,
    declaration: { file, line: at.declLine ?? 3, variable: "api", args },
    route: { method, path },
  };
}

const one = (args: Record<string, StaticValue>) => groupFunctions([qb("f", { name: "w", ...args })])[0]!;
const invalid = async (args: Record<string, StaticValue>) => {
  const error = await caught(() => one(args));
  expect(error).toMatchObject({ code: "ENDPOINT_ARGUMENT_INVALID", file: "worker.py", line: 10 });
  return error.message as string;
};

describe("svc:group-endpoints normalisation", () => {
  it("fills the documented defaults for a queue-based endpoint", () => {
    const spec = one({});
    expect(spec).toMatchObject({
      name: "w",
      type: "QB",
      file: "worker.py",
      module: "worker",
      line: 10,
      hardware: { instanceIds: ["cpu3c-2-4"] },
      scaling: { workersMin: 0, workersMax: 3, idleTimeout: 5, scalerType: "QUEUE_DELAY", scalerValue: 4 },
      executionTimeoutMs: 600_000,
      env: {},
      dependencies: [],
    });
    expect(spec.functions.map((fn) => fn.name)).toEqual(["f"]);
  });

  it("defaults load-balanced endpoints to REQUEST_COUNT scaling", () => {
    const [spec] = groupFunctions([lb("a", "GET", "/a", { name: "api" }, { line: 6 }), lb("b", "POST", "/b", { name: "api" }, { line: 9 })]);
    expect(spec).toMatchObject({ name: "api", type: "LB", line: 3, scaling: { scalerType: "REQUEST_COUNT" } });
    expect(spec!.functions.map((fn) => fn.name)).toEqual(["a", "b"]);
  });

  it("normalises gpu, workers, timeouts, env and dependencies", () => {
    expect(one({ gpu: "ADA_24" }).hardware).toEqual({ gpuIds: ["ADA_24"], gpuCount: 1 });
    expect(one({ gpu: ["ADA_24", "AMPERE_80", "AMPERE_16"], gpu_count: 2 }).hardware).toEqual({ gpuIds: ["ADA_24", "AMPERE_80", "AMPERE_16"], gpuCount: 2 });
    expect(one({ cpu: ["cpu3c-2-4", "cpu5c-4-8"] }).hardware).toEqual({ instanceIds: ["cpu3c-2-4", "cpu5c-4-8"] });
    expect(one({ gpu: null, cpu: "cpu3c-4-8" }).hardware).toEqual({ instanceIds: ["cpu3c-4-8"] });
    expect(one({ workers: 5 }).scaling).toMatchObject({ workersMin: 0, workersMax: 5 });
    expect(one({ workers: [2, 4], idle_timeout: 0, scaler_type: "REQUEST_COUNT", scaler_value: 0 }).scaling).toEqual({
      workersMin: 2,
      workersMax: 4,
      idleTimeout: 0,
      scalerType: "REQUEST_COUNT",
      scalerValue: 0,
    });
    expect(one({ execution_timeout: 30.5 }).executionTimeoutMs).toBe(30_500);
    expect(one({ env: { A: "1" }, dependencies: ["pillow>=10", " requests "] })).toMatchObject({ env: { A: "1" }, dependencies: ["pillow>=10", "requests"] });
    expect(one({ flashboot: false }).name).toBe("w");
  });

  it("rejects invalid arguments at the declaration's file:line", async () => {
    expect(await invalid({ gpu: "H100" })).toContain("valid GpuGroup members: AMPERE_16, AMPERE_24, ADA_24, AMPERE_48, ADA_48_PRO, AMPERE_80, ADA_80_PRO");
    expect(await invalid({ gpu: ["ADA_24", "AMPERE_16", "AMPERE_24", "AMPERE_48"] })).toContain("1 to 3");
    expect(await invalid({ gpu: [] })).toContain("1 to 3");
    expect(await invalid({ gpu: "ADA_24", cpu: "cpu3c-2-4" })).toContain("not both");
    expect(await invalid({ gpu: "ADA_24", gpu_count: 0 })).toContain("gpu_count");
    expect(await invalid({ gpu_count: 2 })).toContain("gpu_count needs gpu=");
    expect(await invalid({ cpu: 4 })).toContain("CPU flavour");
    expect(await invalid({ workers: [3, 1] })).toContain("min <= max");
    expect(await invalid({ workers: -1 })).toContain("min <= max");
    expect(await invalid({ workers: [1, 2, 3] })).toContain("(min, max)");
    expect(await invalid({ workers: "3" })).toContain("workers");
    expect(await invalid({ idle_timeout: -1 })).toContain("idle_timeout");
    expect(await invalid({ scaler_type: "CPU" })).toContain("QUEUE_DELAY, REQUEST_COUNT");
    expect(await invalid({ scaler_value: -1 })).toContain("scaler_value");
    expect(await invalid({ execution_timeout: 0 })).toContain("execution_timeout");
    expect(await invalid({ env: { A: 1 } })).toContain('env value of "A" must be a string');
    expect(await invalid({ env: ["A"] })).toContain("str names to str values");
    expect(await invalid({ dependencies: "pillow" })).toContain("list of requirement strings");
    expect(await invalid({ flashboot: "yes" })).toContain("flashboot");
    expect(await invalid({ gpus: "ADA_24" })).toContain('unknown argument "gpus"');
    expect(await invalid({ name: "bad name" })).toContain("letters, digits, '-' and '_'");
    expect(await invalid({ name: null })).toContain("name is required");
    expect(await invalid({ name: 3 })).toContain("name must be a string");
  });
});

describe("svc:group-endpoints applies the one Endpoint schema's bounds (core/endpoint-schema.ts)", () => {
  it.each([
    [{ execution_timeout: 2 }, "execution_timeout must be a number of seconds from 5 to 604800 (7 days), got 2"],
    [{ execution_timeout: 1_000_000 }, "from 5 to 604800 (7 days), got 1000000"],
    [{ execution_timeout: 4.999 }, "execution_timeout"],
    [{ workers: [0, 101] }, "<= 100"],
    [{ gpu: "ADA_24", gpu_count: 9 }, "gpu_count must be an integer from 1 to 8"],
    [{ idle_timeout: 86_401 }, "idle_timeout must be a whole number of seconds from 0 to 86400"],
    [{ idle_timeout: 2.5 }, "whole number"],
    [{ scaler_value: 1.5 }, "scaler_value must be an integer from 0 to 10000"],
    [{ cpu: Array.from({ length: 11 }, () => "cpu3c-2-4") }, "1 to 10"],
  ] as Array<[Record<string, StaticValue>, string]>)("%j", async (args, message) => {
    expect(await invalid(args)).toContain(message);
  });

  it("accepts the bounds themselves", () => {
    expect(one({ execution_timeout: 5 }).executionTimeoutMs).toBe(5_000);
    expect(one({ execution_timeout: 604_800 }).executionTimeoutMs).toBe(604_800_000);
    expect(one({ workers: [100, 100], idle_timeout: 86_400, scaler_value: 10_000 }).scaling).toMatchObject({
      workersMax: 100,
      idleTimeout: 86_400,
      scalerValue: 10_000,
    });
  });
});

describe("svc:group-endpoints uniqueness rules", () => {
  it("DUPLICATE_ENDPOINT: two queue-based functions with one name, naming both places", async () => {
    const error = await caught(() => groupFunctions([qb("a", { name: "w" }, { file: "a.py", line: 4 }), qb("b", { name: "w" }, { file: "b.py", line: 7 })]));
    expect(error).toMatchObject({ code: "DUPLICATE_ENDPOINT", file: "b.py", line: 7 });
    expect(error.message).toContain("a.py:4 and b.py:7");
  });

  it("DUPLICATE_ENDPOINT: one load-balanced name declared by two Endpoint objects", async () => {
    const error = await caught(() =>
      groupFunctions([lb("a", "GET", "/a", { name: "api" }, { file: "one.py", line: 6 }), lb("b", "GET", "/b", { name: "api" }, { file: "two.py", line: 6 })]),
    );
    expect(error).toMatchObject({ code: "DUPLICATE_ENDPOINT", file: "two.py", line: 3 });
  });

  it("DUPLICATE_ENDPOINT: one Endpoint object decorating two queue-based functions", async () => {
    const shared = { file: "w.py", line: 2, variable: "worker", args: { name: "w" } };
    const f = (name: string, line: number): DiscoveredFunction => ({
      name,
      file: "w.py",
      line,
      module: "w",
      isAsync: false,
      isGenerator: false,
      declaration: shared,
    });
    const error = await caught(() => groupFunctions([f("a", 5), f("b", 9)]));
    expect(error).toMatchObject({ code: "DUPLICATE_ENDPOINT", line: 9 });
  });

  it("DUPLICATE_FUNCTION: one function name in two endpoints", async () => {
    const error = await caught(() => groupFunctions([qb("run", { name: "first" }, { file: "a.py" }), qb("run", { name: "second" }, { file: "b.py" })]));
    expect(error).toMatchObject({ code: "DUPLICATE_FUNCTION", file: "b.py", line: 11 });
  });

  it("allows one function with two routes, and rejects two different functions with one name", async () => {
    const args = { name: "api" };
    expect(groupFunctions([lb("items", "GET", "/items", args, { line: 6 }), lb("items", "DELETE", "/items", args, { line: 6 })])).toHaveLength(1);
    const error = await caught(() => groupFunctions([lb("items", "GET", "/items", args, { line: 6 }), lb("items", "POST", "/items", args, { line: 12 })]));
    expect(error).toMatchObject({ code: "DUPLICATE_FUNCTION", line: 12 });
  });

  it("MIXED_ENDPOINT_KINDS: a queue function and routes under one name", async () => {
    const error = await caught(() => groupFunctions([lb("a", "GET", "/a", { name: "x" }, { line: 6 }), qb("b", { name: "x" }, { file: "api.py", line: 20 })]));
    expect(error).toMatchObject({ code: "MIXED_ENDPOINT_KINDS", file: "api.py", line: 20 });
  });
});

describe("svc:lb-routes", () => {
  const api = (routes: Array<[HttpMethod, string]>): EndpointSpec[] =>
    groupFunctions(routes.map(([method, path], i) => lb(`f${i}`, method, path, { name: "api" }, { line: 10 + i * 4 })));

  it("accepts distinct METHOD + path pairs", () => {
    expect(() =>
      checkRoutes(
        api([
          ["GET", "/items"],
          ["POST", "/items"],
          ["GET", "/items/{id}"],
          ["GET", "/"],
        ]),
      ),
    ).not.toThrow();
  });

  it("rejects duplicates (trailing slash included), reserved paths and relative paths", async () => {
    expect(
      await caught(() =>
        checkRoutes(
          api([
            ["GET", "/a"],
            ["GET", "/a/"],
          ]),
        ),
      ),
    ).toMatchObject({ code: "DUPLICATE_ROUTE", line: 14 });
    expect(await caught(() => checkRoutes(api([["POST", "/execute"]])))).toMatchObject({ code: "RESERVED_ROUTE", line: 10 });
    expect(await caught(() => checkRoutes(api([["GET", "/ping/"]])))).toMatchObject({ code: "RESERVED_ROUTE" });
    const relative = await caught(() => checkRoutes(api([["GET", "items"]])));
    expect(relative).toMatchObject({ code: "ENDPOINT_ARGUMENT_INVALID", line: 10 });
    expect(relative.message).toContain("must start with '/'");
  });
});

describe("svc:gpu-image", () => {
  it("uses the GPU image for gpuIds and the CPU image otherwise, LB included", () => {
    const [gpuLb] = groupFunctions([lb("a", "GET", "/a", { name: "api", gpu: "ADA_24" }, { line: 6 })]);
    const [cpuLb] = groupFunctions([lb("a", "GET", "/a", { name: "api" }, { line: 6 })]);
    expect(imageFor(gpuLb!, DEFAULT_IMAGES)).toBe(DEFAULT_IMAGES.gpu);
    expect(imageFor(cpuLb!, DEFAULT_IMAGES)).toBe(DEFAULT_IMAGES.cpu);
    expect(imageFor(one({ gpu: "AMPERE_16" }), { gpu: "my/gpu", cpu: "my/cpu" })).toBe("my/gpu");
    expect(imageFor(one({ cpu: "cpu3c-2-4" }), { gpu: "my/gpu", cpu: "my/cpu" })).toBe("my/cpu");
  });
});
