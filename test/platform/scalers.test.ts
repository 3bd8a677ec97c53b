/**
 * The scalers of queue endpoints, with the hosted semantics (docs/platform.md, "Autoscaling"), on
 * real workers: REQUEST_COUNT keeps ceil((queued + running) / scalerValue) workers, so a burst uses
 * all of workersMax; QUEUE_DELAY adds a worker only once a job has waited more than scalerValue
 * seconds. Counted by the workers that ran the jobs (their status' workerId). The figures for
 * 200 runsync clients are bench/platform/scalers.ts's.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, buildFixtureArtifact, startTestPlatform, uploadArtifact, saveEndpoint, waitFinal, waitFor, type TestPlatform } from "./_support.ts";

let p: TestPlatform;
let buildId: string;

beforeAll(async () => {
  p = await startTestPlatform();
  ({ buildId } = await uploadArtifact(p, await buildFixtureArtifact()));
}, 60_000);
afterAll(async () => p?.dispose());

/** Sends `n` jobs of `seconds` each to a new `work` endpoint; answers the ids of the workers that ran them. */
async function burst(scalerType: string, scalerValue: number, n: number, seconds: number): Promise<{ workersUsed: number; peak: number }> {
  const { id } = await saveEndpoint(p, buildId, {
    name: `${scalerType.toLowerCase().replace("_", "")}-${scalerValue}-work` /* runs the manifest endpoint "work" */,
    workersMin: 0,
    workersMax: 4,
    scalerType,
    scalerValue,
    idleTimeout: 60,
  });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await api(p, "POST", `/v2/${id}/run`, { input: { op: "sleep", seconds } })).body.id);
  let peak = 0;
  const finals = await waitFor(
    "the jobs to finish",
    async () => {
      peak = Math.max(peak, p.context.supervisor.forEndpoint(id).length);
      const all = await Promise.all(ids.map((job) => api(p, "GET", `/v2/${id}/status/${job}`)));
      return all.every((r) => r.body.status === "COMPLETED") && all.map((r) => r.body);
    },
    60_000,
    100,
  );
  return { workersUsed: new Set(finals.map((j) => j.workerId)).size, peak };
}

describe("queue endpoint scalers", () => {
  it("REQUEST_COUNT (1 request per worker): a burst of 12 jobs runs on all 4 workers", async () => {
    const { workersUsed, peak } = await burst("REQUEST_COUNT", 1, 12, 1.5);
    expect(peak).toBe(4);
    expect(workersUsed).toBe(4);
  }, 90_000);

  it("REQUEST_COUNT (4 per worker): 8 jobs get 2 workers, never more, however long they wait", async () => {
    const { workersUsed, peak } = await burst("REQUEST_COUNT", 4, 8, 2);
    expect(peak).toBe(2);
    expect(workersUsed).toBe(2);
  }, 90_000);

  it("QUEUE_DELAY with a delay no job reaches (60 s): the same kind of burst stays on one worker", async () => {
    const { workersUsed, peak } = await burst("QUEUE_DELAY", 60, 8, 0.2);
    expect(peak).toBe(1);
    expect(workersUsed).toBe(1);
  }, 90_000);

  it("QUEUE_DELAY (1 s): jobs that wait longer than that get more workers", async () => {
    const { workersUsed } = await burst("QUEUE_DELAY", 1, 8, 1.5);
    expect(workersUsed).toBeGreaterThan(1);
  }, 90_000);
});
