/**
 * The Ray backend's figures beside the local one (docs/platform.md, "Workers on a Ray cluster"), on
 * a real Ray cluster started here (test/platform/_ray-cluster.ts: a head without CPUs and two
 * 2-CPU nodes): worker cold start (first runsync on a fresh endpoint, and the platform's own
 * spawn → ready figure) through Ray and locally, warm runsync p50/p99 through a Ray-placed worker
 * and a local one, and the time from a node's death to its job finishing on another node. Both
 * platforms run in this process from sources with the tests' short timings (1 s pings), one after
 * the other on the same machine.
 *
 *   npx tsx bench/platform/ray.ts [--cold 3] [--runsync 200]
 */
import { parseArgs } from "node:util";
import {
  api,
  buildFixtureArtifact,
  deploy,
  saveEndpoint,
  startTestPlatform,
  tempDir,
  waitFinal,
  waitFor,
  type TestPlatform,
} from "../../test/platform/_support.ts";
import { RayCluster } from "../../test/platform/_ray-cluster.ts";
import type { PlatformOptions } from "../../platform/options.ts";

const { values } = parseArgs({ options: { cold: { type: "string", default: "3" }, runsync: { type: "string", default: "200" } } });
const COLD = Number(values.cold);
const RUNSYNC = Number(values.runsync);

const pct = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const median = (xs: number[]) => pct(xs, 0.5);

async function measure(label: string, workers: PlatformOptions["workers"]): Promise<void> {
  const p: TestPlatform = await startTestPlatform({ workers, rateLimits: false });
  try {
    const artifact = await buildFixtureArtifact();
    const { buildId, endpoints } = await deploy(p, artifact, [{ name: "work", workersMax: 1, idleTimeout: 600 }]);
    const firsts: number[] = [];
    const spawnReady: number[] = [];
    for (let i = 0; i < COLD; i++) {
      const e = await saveEndpoint(p, buildId, { name: `cold${i}-work`, workersMax: 1, idleTimeout: 600 });
      const t0 = performance.now();
      const r = await api(p, "POST", `/v2/${e.id}/runsync`, { input: { op: "echo", value: i } });
      const body = r.body.status === "COMPLETED" ? r.body : await waitFinal(p, e.id, r.body.id, 120_000);
      if (body.status !== "COMPLETED") throw new Error(`cold runsync: ${JSON.stringify(body)}`);
      firsts.push(performance.now() - t0);
      spawnReady.push(p.context.supervisor.forEndpoint(e.id)[0]?.coldStartMs ?? NaN);
      // its worker goes (a 2-CPU flavour: each of the two nodes holds one worker at a time)
      await Promise.all(p.context.supervisor.forEndpoint(e.id).map((w) => p.context.supervisor.stop(w, "measured")));
    }
    const id = endpoints.work!.id;
    await waitFinal(p, id, (await api(p, "POST", `/v2/${id}/run`, { input: { op: "echo", value: 0 } })).body.id, 120_000); // warm
    const lat: number[] = [];
    for (let i = 0; i < RUNSYNC; i++) {
      const t0 = performance.now();
      const r = await api(p, "POST", `/v2/${id}/runsync`, { input: { op: "echo", value: i } });
      if (r.body.status !== "COMPLETED") throw new Error(`runsync: ${JSON.stringify(r.body)}`);
      lat.push(performance.now() - t0);
    }
    console.log(
      `${label.padEnd(6)} cold start: first runsync ${firsts.map((x) => x.toFixed(0)).join(", ")} ms (median ${median(firsts).toFixed(0)}); spawn → ready ${spawnReady.map((x) => x.toFixed(0)).join(", ")} ms`,
    );
    console.log(`${label.padEnd(6)} warm runsync (${RUNSYNC} sequential): p50 ${median(lat).toFixed(2)} ms, p99 ${pct(lat, 0.99).toFixed(2)} ms`);
  } finally {
    await p.dispose();
  }
}

async function nodeDeath(cluster: RayCluster): Promise<void> {
  const p = await startTestPlatform({ workers: { backend: "ray", address: cluster.dashboard, nodeDir: await tempDir("svc-ray-node-") } });
  try {
    const { endpoints } = await deploy(p, await buildFixtureArtifact(), [{ name: "work", workersMax: 1, idleTimeout: 600 }]);
    const id = endpoints.work!.id;
    const run = await api(p, "POST", `/v2/${id}/run`, { input: { op: "sleep", seconds: 2 } });
    const first = await waitFor(
      "the job running on a placed worker",
      async () => {
        const s = (await api(p, "GET", `/v2/${id}/status/${run.body.id}`)).body;
        const w = s.status === "IN_PROGRESS" ? p.context.supervisor.workers.get(s.workerId) : undefined;
        return w?.remote?.node ? w : undefined;
      },
      120_000,
    );
    const t0 = performance.now();
    await cluster.killNode(cluster.nodes.find((n) => n.id === first.remote!.node)!);
    await waitFor("the job handed back", async () => (await api(p, "GET", `/v2/${id}/status/${run.body.id}`)).body.status !== "IN_PROGRESS", 60_000, 20);
    const handedBack = performance.now() - t0;
    const final = await waitFinal(p, id, run.body.id, 120_000);
    const done = performance.now() - t0;
    const second = p.context.supervisor.workers.get(final.workerId);
    console.log(
      `node death → job handed back ${handedBack.toFixed(0)} ms → ${final.status} on another node ${done.toFixed(0)} ms (the job itself sleeps 2 s; the new worker's spawn → ready ${second?.coldStartMs ?? "?"} ms)`,
    );
  } finally {
    await p.dispose();
  }
}

const cluster = await RayCluster.start();
try {
  await Promise.all([cluster.addNode("a", 2), cluster.addNode("b", 2)]);
  await measure("local", { backend: "local" });
  await measure("ray", { backend: "ray", address: cluster.dashboard, nodeDir: await tempDir("svc-ray-node-") });
  await nodeDeath(cluster);
} finally {
  await cluster.stop();
}
