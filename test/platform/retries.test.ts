/**
 * Declared retries (`@Endpoint(..., retries=...)`, docs/platform.md "Retries"): a job whose
 * function raised runs again up to max_retries times, after initial_delay × backoff^k, then FAILs;
 * its status shows the attempts and /health counts it as retried; INPUT_INVALID runs once. The runs
 * are counted by a collector on loopback that the function calls, not by reading logs.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { api, buildFixtureArtifact, gqlOk, saveEndpoint, startTestPlatform, uploadArtifact, waitFinal, type TestPlatform } from "./_support.ts";

let platform: TestPlatform | undefined;
let collector: Server | undefined;

afterAll(async () => {
  await platform?.close();
  collector?.close();
});

/** Counts the calls per job name (`?n=`) on loopback, with the time of each. */
async function startCollector(): Promise<{ url: string; runs: Map<string, number[]> }> {
  const runs = new Map<string, number[]>();
  collector = createServer((req, res) => {
    const n = new URL(req.url ?? "/", "http://x").searchParams.get("n") ?? "";
    runs.set(n, [...(runs.get(n) ?? []), Date.now()]);
    res.end("ok");
  });
  await new Promise<void>((resolve) => collector!.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(collector.address() as { port: number }).port}/ran`, runs };
}

describe("declared retries", () => {
  it("a raising job runs max_retries + 1 times with backoff, then FAILED with its attempts; INPUT_INVALID once; /health counts the retried", async () => {
    const { url, runs } = await startCollector();
    platform = await startTestPlatform();
    const artifact = await buildFixtureArtifact();
    // what `retries=Retries(max_retries=2, backoff=2.0, initial_delay=0.3)` puts in the manifest (test/core covers the decorator → manifest step)
    (artifact.manifest as { endpoints: Record<string, Record<string, unknown>> }).endpoints.work!.retries = { maxRetries: 2, backoff: 2, initialDelayMs: 300 };
    const { buildId } = await uploadArtifact(platform, artifact);
    // a sandboxed worker has a network of its own: the collector is reachable as a URL recorded on the build (graceful-stop.test.ts)
    await gqlOk(platform, "mutation($b: String!, $u: JSON!) { setBuildEndpointUrls(buildId: $b, urls: $u) { id } }", { b: buildId, u: { collector: url } });
    const work = (await saveEndpoint(platform, buildId, { name: "work", workersMin: 1, workersMax: 1 })).id;

    const failing = (await api(platform, "POST", `/v2/${work}/run`, { input: { op: "collect-fail", value: url, name: "flaky", message: "transient" } })).body
      .id;
    const invalid = (await api(platform, "POST", `/v2/${work}/run`, { input: { op: "collect-invalid", value: url, name: "invalid", message: "bad field" } }))
      .body.id;
    const unknownField = await api(platform, "POST", `/v2/${work}/runsync`, { input: { nope: 1 } });
    const ok = await api(platform, "POST", `/v2/${work}/runsync`, { input: { op: "echo", value: 7 } });

    const final = await waitFinal(platform, work, failing, 30_000);
    expect(final.status).toBe("FAILED");
    expect(final.attempts).toBe(3);
    expect(final.error).toContain("transient");
    const times = runs.get("flaky")!;
    expect(times).toHaveLength(3); // exactly N + 1 runs
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(280); // initial_delay
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(580); // × backoff

    expect((await waitFinal(platform, work, invalid, 30_000)).status).toBe("FAILED");
    expect(runs.get("invalid")).toHaveLength(1); // InputValidationError: never retried
    expect(unknownField.status).toBe(400); // INPUT_INVALID from the signature check: once, answered at once
    expect(unknownField.body.attempts).toBeUndefined();
    expect(ok.body).toMatchObject({ status: "COMPLETED", output: { echo: 7 } });
    expect(ok.body.attempts).toBeUndefined(); // the common body is unchanged

    const health = await api(platform, "GET", `/v2/${work}/health`);
    expect(health.body.jobs).toMatchObject({ failed: 3, retried: 1 });
  }, 60_000);
});
