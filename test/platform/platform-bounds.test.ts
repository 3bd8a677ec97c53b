/**
 * Bounds the platform enforces itself, not only the SDK and the build (issue 35, finding 5): a
 * manifest's retries, the JSON nesting of a load-balanced route's body (by path and by Host), a
 * flavour larger than the machine. The big jobs-done batch is test/platform/limits.test.ts. A real
 * platform on loopback with the fixture's real Python workers.
 */
import { totalmem } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CPU_FLAVOURS } from "../../platform/workers/flavours.ts";
import { api, buildFixtureArtifact, deploy, saveEndpoint, startTestPlatform, uploadArtifact, type BuiltArtifact, type TestPlatform } from "./_support.ts";

let p: TestPlatform;
let artifact: BuiltArtifact;
const logs: string[] = [];

beforeAll(async () => {
  p = await startTestPlatform({ log: (line) => logs.push(line) });
  artifact = await buildFixtureArtifact();
}, 60_000);
afterAll(async () => p?.dispose());

describe("a manifest's retries", () => {
  it.each([
    ["maxRetries: 100000", { maxRetries: 100_000, backoff: 2, initialDelayMs: 1000 }, /maxRetries/],
    ["backoff: 1000", { maxRetries: 3, backoff: 1000, initialDelayMs: 1000 }, /backoff/],
    ["initialDelayMs: a day", { maxRetries: 3, backoff: 2, initialDelayMs: 86_400_000 }, /initialDelayMs/],
  ])("refuses %s at deploy with MANIFEST_INVALID", async (_name, retries, field) => {
    const manifest = structuredClone(artifact.manifest) as { endpoints: Record<string, Record<string, unknown>> };
    manifest.endpoints.work!.retries = retries;
    const refused = uploadArtifact(p, { ...artifact, manifest } as BuiltArtifact, "bounds-app");
    await expect(refused).rejects.toThrow(/Invalid manifest/);
    await expect(refused).rejects.toThrow(field);
  });
});

describe("a load-balanced route's body", () => {
  it("nested 5,000 deep answers 400 JSON_TOO_DEEP, under /lb/ and by Host, and the worker keeps answering", async () => {
    const { endpoints } = await deploy(p, artifact, [{ name: "api", type: "LB", workersMax: 1 }]);
    const id = endpoints.api!.id;
    expect((await api(p, "POST", `/lb/${id}/add`, { a: 2, b: 3 })).body).toMatchObject({ sum: 5 });
    const deep = `{"a": ${"[".repeat(5000)}1${"]".repeat(5000)}, "b": 1}`;
    const byPath = await fetch(`${p.url}/lb/${id}/add`, {
      method: "POST",
      headers: { authorization: `Bearer ${p.apiKey}`, "content-type": "application/json" },
      body: deep,
    });
    expect(byPath.status).toBe(400);
    expect(await byPath.json()).toMatchObject({ code: "JSON_TOO_DEEP" });
    // By Host (`<endpoint>.localhost`), over a raw request: fetch does not let a caller set Host.
    const { request } = await import("node:http");
    const byHost = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        `${p.url}/add`,
        { method: "POST", headers: { host: `${id}.localhost`, authorization: `Bearer ${p.apiKey}`, "content-type": "application/json" } },
        (res) => {
          let body = "";
          res.on("data", (c) => (body += c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on("error", reject);
      req.end(deep);
    });
    expect(byHost.status).toBe(400);
    expect(JSON.parse(byHost.body)).toMatchObject({ code: "JSON_TOO_DEEP" });
    expect((await api(p, "POST", `/lb/${id}/add`, { a: 1, b: 1 })).body).toMatchObject({ sum: 2 });
  }, 60_000);
});

describe("a flavour larger than the machine", () => {
  const larger = Object.entries(CPU_FLAVOURS).find(([, size]) => size.memoryGb * 1024 ** 3 > totalmem())?.[0];

  it.runIf(larger)("is capped to the machine's memory, with a warning at deploy", async () => {
    const { buildId } = await uploadArtifact(p, artifact);
    const { id } = await saveEndpoint(p, buildId, { name: "work", workersMax: 0, instanceIds: [larger!] });
    const health = await api(p, "GET", `/v2/${id}/health`);
    expect(health.body.limits.flavour).toBe(larger);
    expect(health.body.limits.memoryBytes).toBeLessThanOrEqual(totalmem());
    expect(health.body.limits.capped).toMatch(new RegExp(`flavour ${larger} asks .*; this machine has`));
    expect(logs.find((line) => line.startsWith("warning: endpoint work: flavour"))).toMatch(/each worker gets at most that/);
  });
});
