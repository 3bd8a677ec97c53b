/**
 * A graceful stop of the platform (what `svc platform stop` and Ctrl+C do: close()) while jobs run:
 * the workers finish their running jobs and the results commit before the API stops listening;
 * the queued jobs run after the restart. Every job runs exactly once, counted by a collector on
 * loopback that the function calls (not by reading logs). A sandboxed worker has a network of its
 * own: the collector's URL is recorded on the build, as `svc run` records its dev server's, so the
 * platform tunnels that port in (platform/workers/worker-channel.ts). docs/platform.md, "Stopping".
 */
import { afterAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { rm } from "node:fs/promises";
import {
  api,
  buildFixtureArtifact,
  gqlOk,
  saveEndpoint,
  startTestPlatform,
  tempDir,
  uploadArtifact,
  waitFinal,
  waitFor,
  type TestPlatform,
} from "./_support.ts";

const JOBS = 60;
let dir: string | undefined;
let collector: Server | undefined;
const platforms: TestPlatform[] = [];

afterAll(async () => {
  for (const p of platforms) await p.close();
  collector?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Counts the calls per job name (`?n=`) on loopback. */
async function startCollector(): Promise<{ url: string; runs: Map<string, number> }> {
  const runs = new Map<string, number>();
  collector = createServer((req, res) => {
    const n = new URL(req.url ?? "/", "http://x").searchParams.get("n") ?? "";
    runs.set(n, (runs.get(n) ?? 0) + 1);
    res.end("ok");
  });
  await new Promise<void>((resolve) => collector!.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(collector.address() as { port: number }).port}/ran`, runs };
}

describe("graceful stop", () => {
  it(`with ${JOBS} jobs in flight: running jobs finish and commit, the rest run after the restart, each exactly once`, async () => {
    dir = await tempDir("svc-platform-graceful-");
    const { url, runs } = await startCollector();
    const first = await startTestPlatform({ dataDir: dir });
    platforms.push(first);
    const { buildId } = await uploadArtifact(first, await buildFixtureArtifact());
    await gqlOk(first, "mutation($b: String!, $u: JSON!) { setBuildEndpointUrls(buildId: $b, urls: $u) { id } }", { b: buildId, u: { collector: url } });
    const work = (await saveEndpoint(first, buildId, { name: "work", workersMin: 3, workersMax: 3 })).id;
    const ids: string[] = [];
    for (let i = 0; i < JOBS; i++)
      ids.push((await api(first, "POST", `/v2/${work}/run`, { input: { op: "collect", value: url, name: String(i), seconds: 0.4 } })).body.id);
    // Stop while some jobs run and others wait.
    await waitFor("some jobs to run", () => runs.size >= 6, 30_000, 20);
    await first.close();
    const ranBeforeStop = runs.size;
    expect(ranBeforeStop).toBeLessThan(JOBS); // the stop came while jobs were still queued

    const second = await startTestPlatform({ dataDir: dir });
    platforms.push(second);
    expect(second.recovered.requeued).toBe(0); // no job was left running: each running one finished and committed
    const finals = await Promise.all(ids.map((id) => waitFinal(second, work, id, 60_000)));
    expect(finals.map((j) => j.status)).toEqual(Array(JOBS).fill("COMPLETED"));
    expect([...runs.keys()].sort((a, b) => Number(a) - Number(b))).toEqual(ids.map((_, i) => String(i)));
    expect([...runs.entries()].filter(([, count]) => count !== 1)).toEqual([]); // exactly once each
  }, 120_000);
});
