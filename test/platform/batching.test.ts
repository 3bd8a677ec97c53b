/**
 * Request batching (docs/platform.md, "Request batching") on a real embedded platform:
 * fixtures/batched-app deployed with `svc deploy`'s code, its worker the real Python runtime. The
 * function sees up to max_size inputs per call; each job keeps its own id and result; a bad input
 * fails its own job only (checked per item), and so does an exception returned in an item's place.
 */
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { formatDeploySummary } from "../../cli/commands/_deploy-output.ts";
import { api, startTestPlatform, type TestPlatform } from "./_support.ts";

const FIXTURE = new URL("../../fixtures/batched-app/", import.meta.url).pathname;

describe("request batching", () => {
  let platform: TestPlatform;
  let root: string;
  let endpointId: string;
  let listing: string;

  beforeAll(async () => {
    platform = await startTestPlatform();
    root = await mkdtemp(join(tmpdir(), "svc-batched-"));
    await cp(FIXTURE, root, { recursive: true });
    const client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
    const { ctx, summary } = await runDeploy({ root, client, logger: createLogger("silent") });
    endpointId = ctx.deployed.find((e) => e.name === "embed")!.id;
    listing = formatDeploySummary(summary);
  }, 120_000);
  afterAll(async () => {
    await platform?.dispose();
    await rm(root, { recursive: true, force: true });
  });

  it("the deploy's example call sends one item (an element of each list parameter), not lists", () => {
    expect(listing).toContain(`-d '{"input":{"n":1}}'`);
  });

  const final = async (jobId: string) => (await api(platform, "GET", `/v2/${endpointId}/status-sync/${jobId}?wait=60000`)).body;

  it("one call takes up to max_size jobs; each job gets its own result; one bad item fails only itself", async () => {
    // a first job starts the worker (its batch waits max_wait_ms for company, then runs alone)
    const warm = await api(platform, "POST", `/v2/${endpointId}/runsync?wait=60000`, { input: { n: 0 } });
    expect(warm.body).toMatchObject({ status: "COMPLETED", output: { n: 0, call: 1, batch: 1 } });

    const inputs = Array.from({ length: 12 }, (_, n) => (n === 3 ? { n: "three" } : n === 5 ? { n, fail: true } : { n }));
    const ids = await Promise.all(inputs.map(async (input) => (await api(platform, "POST", `/v2/${endpointId}/run`, { input })).body.id as string));
    expect(new Set(ids).size).toBe(12);
    const results = await Promise.all(ids.map(final));

    const bad = results[3];
    expect(bad.status).toBe("FAILED");
    expect(JSON.stringify(bad.error)).toContain("INPUT_INVALID");
    expect(JSON.stringify(bad.error)).toMatch(/n: expected int, got \\"three\\"/);
    expect(results[5].status).toBe("FAILED");
    expect(JSON.stringify(results[5].error)).toContain("item 5 asked to fail");

    const good = results.filter((_, n) => n !== 3 && n !== 5);
    expect(good.map((r) => r.status)).toEqual(Array(10).fill("COMPLETED"));
    expect(good.map((r) => r.output.n)).toEqual([0, 1, 2, 4, 6, 7, 8, 9, 10, 11]); // each job its own item's result
    // Calls as the function saw them: each got every valid item of its batch (the bad input never
    // reached it; the failing item did), never more than max_size.
    const calls = new Map<number, Set<number>>();
    for (const r of good) calls.set(r.output.call, (calls.get(r.output.call) ?? new Set()).add(r.output.batch));
    for (const [call, sizes] of calls) expect(sizes.size, `call ${call} reported one size`).toBe(1);
    const sizes = [...calls.values()].map((s) => [...s][0]!);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(11);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(8);
    expect(Math.min(...sizes)).toBeGreaterThan(1); // never one by one
    const health = (await api(platform, "GET", `/v2/${endpointId}/health`)).body;
    expect(health.jobs).toMatchObject({ completed: 11, failed: 2 });
  }, 90_000);
});
