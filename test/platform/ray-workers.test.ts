/**
 * Workers on a real Ray cluster (docs/platform.md, "Workers on a Ray cluster"): a head and two
 * nodes started here by `ray start` (one declaring 2 GPUs, which Ray accepts without any), the
 * platform with `workers: ray`, an app with a CPU and a GPU endpoint. Each worker runs as a Ray
 * job on the node Ray chose (the GPU one's on the GPU node, with CUDA_VISIBLE_DEVICES as Ray set
 * it), its output reaches the endpoint's logs, one that no node can hold is `throttled` with a line
 * naming what is missing, `svc platform status` lists the nodes and their workers, scaling to zero
 * stops the Ray jobs, and a node killed mid-job hands the job to a worker on another node. First,
 * the worker-backend seam's shared cases run on the same cluster (one cluster for both).
 * Nothing is faked: no GPU exists here, so Ray's GPUs are declared ones and no device is bound.
 */
import { execFile } from "node:child_process";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeState } from "../../platform/state-dir.ts";
import {
  api,
  buildFixtureArtifact,
  deploy,
  gqlOk,
  saveEndpoint,
  startTestPlatform,
  tempDir,
  uploadArtifact,
  waitFinal,
  waitFor,
  type TestPlatform,
} from "./_support.ts";
import { buildAppArtifact, saveImageEndpoint } from "./_app-artifact.ts";
import { describeBackend } from "./_backend-contract.ts";
import { RayCluster, type RayNodeHandle } from "./_ray-cluster.ts";

const BIN = new URL("../../bin/svc.mjs", import.meta.url).pathname;

let cluster: RayCluster;
let cpuNode: RayNodeHandle;
let gpuNode: RayNodeHandle;
let p: TestPlatform;
let buildId: string;
let cpuId: string;
let gpuId: string;

const cpuSpec = { name: "work", workersMax: 2, idleTimeout: 600 };
const gpuSpec = { name: "gpu-work", workersMax: 1, idleTimeout: 600, gpuIds: "AMPERE_16", gpuCount: 1 };

beforeAll(async () => {
  cluster = await RayCluster.start();
  [cpuNode, gpuNode] = await Promise.all([cluster.addNode("cpu", 4), cluster.addNode("gpu", 4, 2)]); // logical CPUs: room for a 2-CPU worker beside the others
  // The nodes see the platform's volumes folder at the same path: the operator's shared mount, here one machine.
  const dataDir = await tempDir();
  const workers = {
    backend: "ray" as const,
    address: cluster.dashboard,
    nodeDir: await tempDir("svc-ray-node-"),
    volumesRoot: join(dataDir, "volumes"),
    pollMs: 250,
  };
  p = await startTestPlatform({ dataDir, workers });
  const deployed = await deploy(p, await buildFixtureArtifact(), [cpuSpec, gpuSpec]);
  buildId = deployed.buildId;
  cpuId = deployed.endpoints.work!.id;
  gpuId = deployed.endpoints["gpu-work"]!.id;
}, 240_000);

afterAll(async () => {
  await p?.dispose();
  await cluster?.stop();
}, 60_000);

const rayJob = async (workerId: string) =>
  (await fetch(`${cluster.dashboard}/api/jobs/svc-${workerId}`)).json() as Promise<{ status: string; driver_node_id: string | null }>;
const logsOf = (endpointId: string) => {
  p.context.store.logs.flush();
  return p.context.store.logs.tail(endpointId, 500);
};
/** The environment of the worker's launcher process on its node (this machine): the Ray job's variables. */
async function launcherEnv(workerId: string): Promise<string[]> {
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const cmd = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    if (!cmd.includes("worker\0launch")) continue;
    const env = (await readFile(`/proc/${pid}/environ`, "utf8").catch(() => "")).split("\0");
    if (env.includes(`SVC_WORKER_ID=${workerId}`)) return env;
  }
  throw new Error(`no launcher process of worker ${workerId}`);
}
const workerOf = (endpointId: string) => p.context.supervisor.forEndpoint(endpointId).find((w) => !w.stopping);
/** A ready worker of the endpoint, after a job that starts one. */
async function startedWorker(endpointId: string) {
  const r = await api(p, "POST", `/v2/${endpointId}/runsync`, { input: { op: "echo", value: 1 } });
  if (r.body.status !== "COMPLETED") await waitFinal(p, endpointId, r.body.id, 120_000);
  return workerOf(endpointId)!;
}

// The worker-backend seam's shared cases (./_backend-contract.ts) on this file's cluster, before the
// cases below kill a node: a platform of their own, disposed (its Ray jobs stopped) before those start.
describeBackend("ray", async () => {
  const workers = { backend: "ray" as const, address: cluster.dashboard, nodeDir: await tempDir("svc-ray-node-"), pollMs: 250 };
  const platform = await startTestPlatform({ workers });
  const nodes = [cpuNode.id, gpuNode.id];
  return {
    platform,
    placement: (w) => (w.remote?.backend === "ray" && nodes.includes(w.remote.node ?? "") && !w.proc ? `Ray node ${w.remote.node}` : undefined),
    ended: async (w) => ["STOPPED", "SUCCEEDED", "FAILED"].includes((await rayJob(w.id)).status),
    dispose: () => platform.dispose(),
  };
});

describe("workers on a Ray cluster", { timeout: 180_000 }, () => {
  it("runs each worker as a Ray job on the node Ray chose: the GPU endpoint's on the GPU node, with Ray's CUDA_VISIBLE_DEVICES", async () => {
    const [cpu, gpu] = await Promise.all([
      api(p, "POST", `/v2/${cpuId}/runsync`, { input: { op: "fail", message: "boom on a Ray node" } }),
      api(p, "POST", `/v2/${gpuId}/runsync`, { input: { op: "env", value: "CUDA_VISIBLE_DEVICES" } }),
    ]);
    const done = async (r: { body: any }, id: string) => (r.body.status === "COMPLETED" ? r.body : waitFinal(p, id, r.body.id, 120_000));
    expect(await done(cpu, cpuId)).toMatchObject({ status: "FAILED" });
    const gpuOut = await done(gpu, gpuId);
    expect(gpuOut).toMatchObject({ status: "COMPLETED", output: { value: expect.stringMatching(/^[01]$/) } });

    const gw = workerOf(gpuId)!;
    expect(gw.remote).toMatchObject({ backend: "ray", node: gpuNode.id });
    // the first placement on idle nodes is Ray starting the job, not a shortage: nothing says "cannot be placed"
    expect([...logsOf(cpuId), ...logsOf(gpuId)].filter((l) => l.includes("cannot be placed yet"))).toEqual([]);
    expect(await rayJob(gw.id)).toMatchObject({ status: "RUNNING", driver_node_id: gpuNode.id });
    const cw = workerOf(cpuId)!;
    expect([cpuNode.id, gpuNode.id]).toContain(cw.remote!.node); // never the head: it has no CPU for a job
    expect((await rayJob(cw.id)).driver_node_id).toBe(cw.remote!.node);
    // what the launcher saw Ray set is what the worker's function saw
    expect(
      logsOf(gpuId).some((l) => l.startsWith(`[${gw.id}] [launcher] worker ${gw.id} starts`) && l.endsWith(`CUDA_VISIBLE_DEVICES=${gpuOut.output.value}`)),
    ).toBe(true);
    // The job's variables (the launcher's environment on its node) hold a launch ticket, not the worker's token.
    const env = await launcherEnv(cw.id);
    expect(env.some((v) => v.startsWith("SVC_WORKER_TOKEN="))).toBe(false);
    expect(env.some((v) => v.startsWith("SVC_LAUNCH_TICKET=wkl_"))).toBe(true);
    // the worker's own output (the runtime's line for a failed job) reaches its logs
    await waitFor("the worker's line in its logs", () => logsOf(cpuId).some((l) => l.startsWith(`[${cw.id}] `) && l.includes("boom on a Ray node")), 5000);
  });

  it("shows a worker no node can hold as throttled, with a log line naming what is missing", async () => {
    const big = await saveEndpoint(p, buildId, { name: "big-work", workersMax: 1, idleTimeout: 600, gpuIds: "AMPERE_16", gpuCount: 4 } as never);
    const run = await api(p, "POST", `/v2/${big.id}/run`, { input: { op: "echo", value: 1 } });
    expect(run.status).toBe(200);
    await waitFor("the worker to be throttled", async () => (await api(p, "GET", `/v2/${big.id}/health`)).body.workers.throttled === 1, 30_000);
    expect(logsOf(big.id).some((l) => l.includes("cannot be placed yet: no Ray node of 3 alive has 4 GPU(s) (the most any node has: 2)"))).toBe(true);
    const waiting = workerOf(big.id)!;
    // No queued job left: the autoscaler stops it. Ray cannot stop a job it has not placed (the stop
    // waits for its supervisor to start), so the worker leaves the platform at once, its token with it.
    await api(p, "POST", `/v2/${big.id}/purge-queue`);
    await waitFor("the unplaced worker to be gone", () => !p.context.supervisor.workers.has(waiting.id), 30_000);
    expect((await rayJob(waiting.id)).status).toBe("PENDING");
    expect(logsOf(big.id).some((l) => l.includes(`worker ${waiting.id} exited (stopped before Ray placed it`))).toBe(true);
  });

  it("svc platform status lists the nodes, their GPUs and the workers on each", async () => {
    writeState(p.dataDir, { pid: process.pid, url: p.url, startedAt: new Date().toISOString() });
    const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
      execFile(
        process.execPath,
        [BIN, "platform", "status", "--dir", p.dataDir],
        { env: { ...process.env, NO_COLOR: "1" }, timeout: 60_000 },
        (error, stdout) => (error && !stdout ? reject(error) : resolve({ stdout })),
      ),
    );
    expect(stdout).toContain(`Workers: Ray jobs on the cluster at ${cluster.dashboard} (3 node(s) alive)`);
    const gpuLine = stdout.split("\n").find((l) => l.includes(`node ${gpuNode.id.slice(0, 12)}`))!;
    expect(gpuLine).toContain("2 GPU");
    expect(gpuLine).toContain(`${workerOf(gpuId)!.id} (gpu-work)`);
  });

  it("gives a worker on a node its endpoint's volume through the shared path (--ray-volumes), read and write", async () => {
    const keeper = `import os\n\nfrom svc import Endpoint\n\n\n@Endpoint(name="keeper")\ndef keep(text: str) -> dict:\n    with open("/platform-volume/inbox/hello.txt", encoding="utf-8") as f:\n        seen = f.read()\n    os.makedirs("/platform-volume/outbox", exist_ok=True)\n    with open("/platform-volume/outbox/reply.txt", "w", encoding="utf-8") as f:\n        f.write(text)\n    return {"seen": seen, "volume": os.environ["PLATFORM_VOLUME_PATH"]}\n`;
    const { createNetworkVolume: vol } = await gqlOk<{ createNetworkVolume: { id: string } }>(
      p,
      "mutation ($i: CreateNetworkVolumeInput!) { createNetworkVolume(input: $i) { id } }",
      { i: { name: "shared-data", size: 1 } },
    );
    const folder = join(p.dataDir, "volumes", vol.id);
    await mkdir(join(folder, "inbox"), { recursive: true });
    await writeFile(join(folder, "inbox", "hello.txt"), "from the platform");
    const { buildId: b } = await uploadArtifact(
      p,
      await buildAppArtifact({ "app/__init__.py": "", "app/store.py": keeper }, [{ name: "keeper", module: "app.store", functions: ["keep"] }]),
      "volume-app",
    );
    const e = await saveImageEndpoint(p, b, { name: "keeper", networkVolumeId: vol.id } as never);
    const r = await api(p, "POST", `/v2/${e.id}/runsync`, { input: { text: "from the node" } });
    const out = r.body.status === "COMPLETED" ? r.body : await waitFinal(p, e.id, r.body.id, 120_000);
    expect(out).toMatchObject({ status: "COMPLETED", output: { seen: "from the platform", volume: "/platform-volume" } });
    expect(await readFile(join(folder, "outbox", "reply.txt"), "utf8")).toBe("from the node");
    expect(workerOf(e.id)!.remote!.node).toBeDefined();
    await Promise.all(p.context.supervisor.forEndpoint(e.id).map((w) => p.context.supervisor.stop(w, "done"))); // frees its node's CPUs
  });

  it("stopping a worker stops its Ray job; scaling to zero ends every one", async () => {
    const killed = workerOf(gpuId)!;
    await p.context.supervisor.kill(killed); // no `stop` signal to exit by itself: only Ray's stop ends the job
    await waitFor("the killed worker's Ray job to be STOPPED", async () => (await rayJob(killed.id)).status === "STOPPED", 30_000);
    const workers = [...p.context.supervisor.forEndpoint(cpuId), ...p.context.supervisor.forEndpoint(gpuId)];
    expect(workers.length).toBeGreaterThan(0);
    await saveEndpoint(p, buildId, { id: gpuId, ...gpuSpec, idleTimeout: 1 } as never);
    await saveEndpoint(p, buildId, { id: cpuId, ...cpuSpec, idleTimeout: 1 } as never);
    await waitFor("no worker left", () => p.context.supervisor.forEndpoint(cpuId).length + p.context.supervisor.forEndpoint(gpuId).length === 0, 60_000);
    for (const w of workers) {
      await waitFor(`Ray job of ${w.id} to end`, async () => ["STOPPED", "SUCCEEDED"].includes((await rayJob(w.id)).status), 30_000);
    }
    await saveEndpoint(p, buildId, { id: cpuId, ...cpuSpec } as never);
  });

  it("another app's worker on a node cannot reach the dashboard; every value of Ray's Jobs API, tried as a bearer, opens no worker route or API route; a ticket redeemed twice is refused and its worker ends", async () => {
    const victim = workerOf(cpuId) ?? (await startedWorker(cpuId));
    // Another app's function, as a hostile tenant deploys it, placed on a Ray node: it tries Ray's Jobs API.
    const snoop = `import urllib.request\n\nfrom svc import Endpoint\n\n\n@Endpoint(name="snoop")\ndef snoop(dashboard: str) -> dict:\n    try:\n        with urllib.request.urlopen(f"{dashboard}/api/jobs/", timeout=5) as r:\n            return {"dashboard": r.status}\n    except Exception as err:\n        return {"dashboard": type(err).__name__}\n`;
    const { buildId: b } = await uploadArtifact(
      p,
      await buildAppArtifact({ "app/__init__.py": "", "app/snoop.py": snoop }, [{ name: "snoop", module: "app.snoop", functions: ["snoop"] }]),
      "snoop-app",
    );
    const e = await saveImageEndpoint(p, b, { name: "snoop" } as never);
    const r = await api(p, "POST", `/v2/${e.id}/runsync`, { input: { dashboard: cluster.dashboard } });
    const out = r.body.status === "COMPLETED" ? r.body : await waitFinal(p, e.id, r.body.id, 120_000);
    expect(out.status, JSON.stringify(out).slice(0, 2000)).toBe("COMPLETED");
    expect(out.output.dashboard, "the dashboard from a worker on a node").not.toBe(200);
    expect(workerOf(e.id)!.remote!.node).toBeDefined();
    await Promise.all(p.context.supervisor.forEndpoint(e.id).map((w) => p.context.supervisor.stop(w, "done"))); // frees its node's CPUs

    // Had it reached the dashboard (a node whose operator did not fence it): every string there, as a bearer.
    const jobs: unknown = await (await fetch(`${cluster.dashboard}/api/jobs/`)).json();
    const strings = (v: unknown): string[] =>
      typeof v === "string" ? [v] : v && typeof v === "object" ? Object.values(v as Record<string, unknown>).flatMap(strings) : [];
    const found = [...new Set(strings(jobs).filter((v) => v.length >= 16 && /^[\x21-\x7e]+$/.test(v)))];
    expect(found.length).toBeGreaterThan(0);
    expect(JSON.stringify(jobs)).not.toContain("wkt_"); // no worker token, in clear or anywhere
    const routes = [...["job-take", "ping", "artifact", "signals"].map((x) => `/v2/_worker/${victim.id}/${x}`), `/v2/${cpuId}/health`, `/v2/${cpuId}/run`];
    for (const value of found)
      for (const route of routes) {
        const res = await fetch(`${p.url}${route}`, { headers: { authorization: `Bearer ${value}` } });
        expect([401, 403], `${value.slice(0, 12)} on ${route}`).toContain(res.status);
      }
    expect(victim.exited).toBe(false); // a wrong credential ends nothing

    // the victim's own ticket, redeemed by its launcher, presented again: refused, and the worker ends with its token
    const ticket = (await launcherEnv(victim.id)).find((v) => v.startsWith("SVC_LAUNCH_TICKET="))!.slice("SVC_LAUNCH_TICKET=".length);
    const again = await fetch(`${p.url}/v2/_worker/${victim.id}/launch`, { headers: { authorization: `Bearer ${ticket}` } });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ code: "WORKER_LAUNCH_TAKEN" });
    expect(victim.exited).toBe(true);
    const ticketOnRoute = await fetch(`${p.url}/v2/_worker/${victim.id}/ping`, { headers: { authorization: `Bearer ${ticket}` } });
    expect(ticketOnRoute.status).toBe(401);
    const forged = await fetch(`${p.url}/v2/_worker/${victim.id}/launch`, { headers: { authorization: "Bearer wkl_forged" } });
    expect(await forged.json()).toMatchObject({ code: "WORKER_TICKET_INVALID" });
  });

  it("hands a job back when its node dies, and it finishes on a worker on another node", async () => {
    const run = await api(p, "POST", `/v2/${cpuId}/run`, { input: { op: "sleep", seconds: 6 } });
    const first = await waitFor(
      "the job to run on a placed worker",
      async () => {
        const s = (await api(p, "GET", `/v2/${cpuId}/status/${run.body.id}`)).body;
        const w = s.status === "IN_PROGRESS" && s.workerId ? p.context.supervisor.workers.get(s.workerId) : undefined;
        return w?.remote?.node ? w : undefined;
      },
      120_000,
    );
    const doomed = cluster.nodes.find((n) => n.id === first.remote!.node)!;
    const survivor = doomed === cpuNode ? gpuNode : cpuNode;
    const killedAt = Date.now();
    await cluster.killNode(doomed);
    const final = await waitFinal(p, cpuId, run.body.id, 120_000);
    console.log(`node death → job completed elsewhere: ${Date.now() - killedAt} ms`);
    expect(final).toMatchObject({ status: "COMPLETED", output: { slept: 6 } });
    expect(final.workerId).not.toBe(first.id);
    expect((await rayJob(final.workerId)).driver_node_id).toBe(survivor.id);
    expect(logsOf(cpuId).some((l) => l.includes(`worker ${first.id}`) && /unhealthy|exited/.test(l))).toBe(true);
  });
});
