/**
 * Typed parameters end to end on the build side: discovery's parameters reach the manifest, the dev
 * server's /openapi.json (what /docs shows) types every function and route from them, and the
 * `svc client` source declares the same names. The app is the `svc init` template.
 */
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

const TEMPLATE = new URL("../../templates/init/", import.meta.url).pathname;

async function initManifest(): Promise<Manifest> {
  const root = join(mkdtempSync(join(tmpdir(), "svc-typed-")), "demo");
  cpSync(TEMPLATE, root, { recursive: true });
  return (await buildUntilManifest(root)).manifest!;
}

type Operation = { requestBody?: { content: { "application/json": { schema: Record<string, any> } } }; parameters?: Array<{ name: string; in: string; required: boolean }> };

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
        const names = schema ? Object.keys((schema.oneOf?.[0] ?? schema).properties) : (operation.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
        expect(names, fn.name).toEqual((fn.params ?? []).map((p) => p.name));
      }
    }
  });

  it("`svc client` declares one typed function per function and route, with the same parameters", async () => {
    const manifest = await initManifest();
    const source = renderTypedClient({ ...manifest, urls: { api: "http://p/lb/ep_1", "cpu-worker": "http://p/v2/ep_2", "gpu-worker": "http://p/v2/ep_3" } });
    expect(source).toContain("export type GenerateInput = {\n  prompt: string;\n  /** Default: 20. */ steps?: number;\n};");
    expect(source).toContain("export type EchoInput = {\n  text: string;\n  /** Default: 1. */ repeat?: number;\n};");
    expect(source).toMatch(/ {4}generate: \(input: GenerateInput\): Promise<GenerateOutput> => runsync<GenerateOutput>\("gpu-worker", input\),/);
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
});
