/**
 * Typed parameters end to end on the build side: discovery's parameters reach the manifest, the dev
 * server's /openapi.json (what /docs shows) types every function and route from them, and the
 * `svc client` source declares the same names. The app is the `svc init` template.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { paramsSchema } from "../../core/function-schema.ts";
import type { Manifest } from "../../core/types.ts";
import { renderTypedClient, typeOf } from "../../cli/commands/_typed-client.ts";
import { buildRouteTable } from "../../dev/routes/routes-table.ts";
import { createDevApp } from "../../dev/routes/routes.ts";
import { buildUntilManifest } from "./_front-half.ts";
import { copyFixture } from "./_helpers.ts";

const TEMPLATE = new URL("../../templates/init/", import.meta.url).pathname;
const RUNTIME = new URL("../../runtime/python/", import.meta.url).pathname;

async function initManifest(): Promise<Manifest> {
  const root = join(mkdtempSync(join(tmpdir(), "svc-typed-")), "demo");
  cpSync(TEMPLATE, root, { recursive: true });
  return (await buildUntilManifest(root)).manifest!;
}

type Operation = {
  requestBody?: { content: { "application/json": { schema: Record<string, any> } } };
  parameters?: Array<{ name: string; in: string; required: boolean }>;
};

describe("typed parameters", () => {
  it("/openapi.json (served for /docs) has every function's and route's parameters by name, type and default", async () => {
    const manifest = await initManifest();
    const notUsedHere = () => Promise.reject(new Error("the platform side is not part of this test"));
    const app = createDevApp({
      manifest: () => manifest,
      table: () => buildRouteTable(manifest),
      health: () => ({}),
      ensure: notUsedHere,
      runsync: notUsedHere,
      status: notUsedHere,
      lbRequest: notUsedHere,
      metrics: notUsedHere,
      syncTimeoutMs: 1000,
    });
    const spec = (await (await app.request("/openapi.json")).json()) as { paths: Record<string, Record<string, Operation>> };

    const describeBody = spec.paths["/cpu_worker/runsync"]!.post!.requestBody!.content["application/json"].schema;
    expect(describeBody.oneOf[0]).toEqual({ type: "object", properties: { size_bytes: { type: "integer", default: 1536 } }, additionalProperties: false });
    const generateBody = spec.paths["/gpu_worker/runsync"]!.post!.requestBody!.content["application/json"].schema;
    expect(generateBody.oneOf[0]).toEqual({
      type: "object",
      properties: { prompt: { type: "string" }, steps: { type: "integer", default: 20 } },
      required: ["prompt"],
      additionalProperties: false,
    });
    expect(spec.paths["/api/echo"]!.post!.requestBody!.content["application/json"].schema).toEqual({
      type: "object",
      properties: { text: { type: "string" }, repeat: { type: "integer", default: 1 } },
      required: ["text"],
      additionalProperties: false,
    });
    expect(spec.paths["/api/health"]!.get!.parameters ?? []).toEqual([]);

    // Every function and route of the manifest has an operation whose schema names its parameters.
    for (const endpoint of Object.values(manifest.endpoints)) {
      for (const fn of endpoint.functions) {
        const operations = Object.values(spec.paths).flatMap((methods) => Object.values(methods)) as Array<Operation & { operationId: string }>;
        const operation = operations.find((op) => op.operationId === `${fn.name}_${fn.httpMethod?.toLowerCase() ?? "runsync"}`)!;
        expect(operation, fn.name).toBeDefined();
        const schema = operation.requestBody?.content["application/json"].schema;
        const names = schema
          ? Object.keys((schema.oneOf?.[0] ?? schema).properties)
          : (operation.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
        expect(names, fn.name).toEqual((fn.params ?? []).map((p) => p.name));
      }
    }
  });

  it("`svc client` declares one typed function per function and route, with the same parameters", async () => {
    const manifest = await initManifest();
    const source = renderTypedClient({ ...manifest, urls: { api: "http://p/lb/ep_1", "cpu-worker": "http://p/v2/ep_2", "gpu-worker": "http://p/v2/ep_3" } });
    expect(source).toContain("export type GenerateInput = {\n  prompt: string;\n  /** Default: 20. */ steps?: number;\n};");
    expect(source).toContain("export type EchoInput = {\n  text: string;\n  /** Default: 1. */ repeat?: number;\n};");
    expect(source).toContain('    generate: Object.assign((input: GenerateInput): Promise<GenerateOutput> => runsync<GenerateOutput>("gpu-worker", input), {');
    expect(source).toContain('      map: mapper<GenerateInput, GenerateOutput>("generate", (input) => runsync<GenerateOutput>("gpu-worker", input)),');
    expect(source).toContain('      spawn: (input: GenerateInput): Promise<JobHandle<GenerateOutput>> => spawn<GenerateOutput>("gpu-worker", input),');
    expect(source).toMatch(/ {4}describe: \(input\?: DescribeInput\)/);
    expect(source).toMatch(/ {4}echo: \(input: EchoInput\): Promise<EchoOutput> => route<EchoOutput>\("api", "POST", "\/echo"/);
    expect(source).toMatch(/ {4}health: \(input\?: HealthInput\): Promise<HealthOutput> => route<HealthOutput>\("api", "GET", "\/health"/);
    expect(source).toContain('      generate: (input: GenerateInput) => submit<GenerateOutput>("gpu-worker", input),');
  });

  it("maps annotations to TypeScript through the same JSON Schemas", () => {
    const type = (annotation: string) => typeOf(paramsSchema([{ name: "x", annotation, required: true, kind: "positional_or_keyword" }]));
    expect(type("list[str] | None")).toBe("{\n  x: string[] | null;\n}");
    expect(type("dict[str, float]")).toBe("{\n  x: Record<string, number>;\n}");
    expect(type("Literal['a', 'b']")).toBe('{\n  x: "a" | "b";\n}');
    expect(type("Optional[int]")).toBe("{\n  x: number | null;\n}");
    expect(type("MyClass")).toBe("{\n  x: unknown;\n}");
    expect(typeOf(paramsSchema([{ name: "kw", kind: "var_keyword", required: false }]))).toBe("{\n  [key: string]: unknown;\n}");
  });

  it("TypedDicts, dataclasses and Enums a parameter names are object and enum schemas in /docs and svc client, and the runtime refuses what the schema refuses", async () => {
    const root = copyFixture("typed-app");
    const manifest = (await buildUntilManifest(root)).manifest!;
    const fn = manifest.endpoints.shapes!.functions[0]!;
    expect(Object.keys(fn.types ?? {}).sort()).toEqual(["Box", "Options", "Speed"]);
    const schema = paramsSchema(fn.params, fn.types) as { properties: Record<string, unknown> };
    expect(schema.properties.options).toEqual({
      type: "object",
      title: "Options",
      properties: { depth: { type: "integer" }, label: { type: "string" } },
      required: ["depth"],
      additionalProperties: false,
      nullable: true,
      default: null,
    });
    expect(schema.properties.box).toEqual({
      type: "object",
      title: "Box",
      properties: { width: { type: "number" }, height: { type: "number" }, tags: { type: "array", items: { type: "string" } } },
      required: ["width"],
      additionalProperties: false,
      nullable: true,
      default: null,
    });
    expect(schema.properties.speed).toMatchObject({ enum: ["fast", "slow"], title: "Speed" });
    expect(schema.properties.mode).toEqual({ enum: ["a", "b"], default: "a" });

    const source = renderTypedClient({ ...manifest, urls: { shapes: "http://p/v2/ep_1" } });
    expect(source).toMatch(/options\?: \{\s+depth: number;\s+label\?: string;\s+\} \| null;/);
    expect(source).toMatch(/box\?: \{\s+width: number;\s+height\?: number;\s+tags\?: string\[\];\s+\} \| null;/);
    expect(source).toContain('speed?: "fast" | "slow";');

    // the worker's check (runtime/python/svc/_input_check.py) reads the same shapes from the same code
    const check = `
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from shapes import measure
from svc._input_check import check_input
out = {}
for name, data in json.loads(sys.argv[3]).items():
    try:
        check_input(measure, data)
        out[name] = "ok"
    except Exception as exc:
        out[name] = [f["field"] for f in exc.fields]
print(json.dumps(out))`;
    const cases = {
      good: { options: { depth: 2 }, box: { width: 3, tags: ["x"] }, speed: "slow", mode: "b" },
      bad: { options: { depth: "deep", extra: 1 }, box: { height: 2 }, speed: "medium", mode: "c" },
    };
    const answer = JSON.parse(execFileSync("python3", ["-c", check, root, RUNTIME, JSON.stringify(cases)], { encoding: "utf8" }));
    expect(answer).toEqual({ good: "ok", bad: ["options.depth", "options.extra", "box.width", "speed", "mode"] });
  });
});
