/**
 * GPU workers through the real platform (docs/platform.md, "GPUs"): a GPU endpoint with two warm
 * workers on a one-GPU machine: one holds the GPU and sees it as CUDA_VISIBLE_DEVICES, the other
 * waits (one log line) and takes it when the first is killed; `svc platform status` (the real CLI,
 * another process) lists the GPU and its holder; a worker's key cannot read the GPU view.
 *
 * The GPU inventory is a FAKE (PlatformOptions.gpuMachine): no NVIDIA GPU can exist on the machines
 * these tests run on, so no device node is bound. The platform, its workers (real Python, in the
 * bwrap sandbox where it runs), the queue and the CLI are real.
 */
import { execFile } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeState } from "../../platform/state-dir.ts";
import { parseNvidiaSmi } from "../../platform/workers/gpus.ts";
import { GPUS_ROUTE } from "../../platform/api/gpu-routes.ts";
import { api, buildFixtureArtifact, deploy, startTestPlatform, waitFinal, waitFor, type BuiltArtifact, type TestPlatform } from "./_support.ts";

const BIN = new URL("../../bin/svc.mjs", import.meta.url).pathname;
const UUID = "GPU-0c1d2e3f-aaaa-bbbb-cccc-000000000000";

let p: TestPlatform;
let endpointId: string;
let artifact: BuiltArtifact;

const oneGpu = () =>
  startTestPlatform({
    gpuMachine: { gpus: async () => parseNvidiaSmi(`0, ${UUID}, NVIDIA H100 80GB HBM3, 81559 MiB\n`), libraryDirs: async () => [] },
  });

beforeAll(async () => {
  p = await oneGpu();
  artifact = await buildFixtureArtifact();
  // extra saveEndpoint fields: a GPU endpoint (gpuIds, one GPU per worker) with two warm workers
  const spec = { name: "work", workersMin: 2, workersMax: 2, idleTimeout: 60, gpuIds: "AMPERE_16", gpuCount: 1 };
  endpointId = (await deploy(p, artifact, [spec])).endpoints.work!.id;
}, 60_000);

afterAll(async () => {
  await p?.dispose();
});

interface GpuView {
  gpus: Array<{ index: number; uuid: string; workers: Array<{ workerId: string; endpointName: string }> }>;
  waiting: Array<{ workerId: string; endpointName: string; count: number }>;
}
const gpuView = async (): Promise<GpuView> => (await api(p, "GET", GPUS_ROUTE)).body;
const workerLogs = () => {
  p.context.store.logs.flush(); // lines are written in batches
  return p.context.store.logs.tail(endpointId, 200);
};

describe("GPU workers on a machine with one GPU", { timeout: 90_000 }, () => {
  it("one worker holds the GPU and sees it; the other waits, then takes it when the first is killed", async () => {
    const view = await waitFor(
      "one worker holding the GPU and one waiting",
      async () => {
        const v = await gpuView();
        return v.gpus[0]!.workers.length === 1 && v.waiting.length === 1 ? v : undefined;
      },
      30_000,
    );
    const holder = view.gpus[0]!.workers[0]!.workerId;
    const waiter = view.waiting[0]!.workerId;
    expect(view.waiting[0]).toMatchObject({ endpointName: "work", count: 1 });
    const health = (await api(p, "GET", `/v2/${endpointId}/health`)).body;
    expect(health.gpus).toEqual({ held: [{ index: 0, uuid: UUID, workerId: holder }], waiting: 1 });
    expect(health.workers.throttled).toBe(1); // the hosted state of a worker with no GPU free for it
    expect(workerLogs().filter((line) => line.includes(`worker ${waiter} waits for 1 free GPU(s) (GPU 0: ${holder})`))).toHaveLength(1);

    const seen = await api(p, "POST", `/v2/${endpointId}/runsync`, { input: { op: "env", value: "CUDA_VISIBLE_DEVICES" } });
    expect(seen.body).toMatchObject({ status: "COMPLETED", output: { value: UUID } });
    expect(p.context.supervisor.workers.get(waiter)?.ready).toBe(false); // still waiting: never started its process

    await p.context.supervisor.kill(p.context.supervisor.workers.get(holder)!);
    await waitFor("the waiting worker to hold the GPU", async () => (await gpuView()).gpus[0]!.workers[0]?.workerId === waiter, 30_000);
    await waitFor("the waiting worker to be ready", () => p.context.supervisor.workers.get(waiter)?.ready, 30_000);
    const again = await api(p, "POST", `/v2/${endpointId}/runsync`, { input: { op: "env", value: "CUDA_VISIBLE_DEVICES" } });
    expect(again.body).toMatchObject({ status: "COMPLETED", output: { value: UUID } });
  });

  it("svc platform status lists the GPU and the worker holding it", async () => {
    writeState(p.dataDir, { pid: process.pid, url: p.url, startedAt: new Date().toISOString() });
    const holder = (await gpuView()).gpus[0]!.workers[0]!.workerId;
    const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
      execFile(
        process.execPath,
        [BIN, "platform", "status", "--dir", p.dataDir],
        { env: { ...process.env, NO_COLOR: "1" }, timeout: 60_000 },
        (error, stdout) => (error ? reject(error) : resolve({ stdout })),
      ),
    );
    expect(stdout).toContain(`GPUs: 1\n  GPU 0  NVIDIA H100 80GB HBM3  81559 MiB  ${UUID}  held by ${holder} (work)\n`);
    const json = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [BIN, "platform", "status", "--dir", p.dataDir, "--json"], { timeout: 60_000 }, (error, out) =>
        error ? reject(error) : resolve(out),
      ),
    );
    expect(JSON.parse(json).gpus).toMatchObject({ gpus: [{ index: 0, uuid: UUID, memoryMiB: 81559, workers: [{ workerId: holder, endpointName: "work" }] }] }); // the killed worker's replacement may be waiting
  });

  it("the GPU view needs the platform's key: a worker's key is refused", async () => {
    const res = await fetch(`${p.url}${GPUS_ROUTE}`, {
      headers: { authorization: `Bearer ${p.context.workerKeys.keyFor(p.context.store.endpoints.get(endpointId)!)}` },
    });
    expect(res.status).toBe(403);
    expect((await fetch(`${p.url}${GPUS_ROUTE}`)).status).toBe(401);
  });
});

describe("scaling GPU workers on a machine with one GPU", { timeout: 90_000 }, () => {
  it("a worker still waiting for the GPU when no job is queued is stopped without ever starting", async () => {
    const q = await oneGpu();
    try {
      const spec = {
        name: "work",
        workersMin: 0,
        workersMax: 2,
        idleTimeout: 60,
        scalerType: "REQUEST_COUNT",
        scalerValue: 1,
        gpuIds: "AMPERE_16",
        gpuCount: 1,
      };
      const id = (await deploy(q, artifact, [spec])).endpoints.work!.id;
      const jobs: string[] = [];
      for (let i = 0; i < 2; i++) jobs.push((await api(q, "POST", `/v2/${id}/run`, { input: { op: "sleep", seconds: 3 } })).body.id);
      const { supervisor } = q.context;
      const waiter = await waitFor(
        "a worker waiting for the GPU",
        () => supervisor.forEndpoint(id).find((w) => supervisor.state(w) === "throttled"),
        30_000,
        20,
      );
      for (const job of jobs) expect((await waitFinal(q, id, job, 60_000)).status).toBe("COMPLETED");
      await waitFor("the waiting worker to be stopped", () => waiter.exited, 30_000);
      expect(waiter.spawnedAt).toBeUndefined(); // its process never started
      q.context.store.logs.flush();
      const lines = q.context.store.logs.tail(id, 200);
      expect(
        lines.filter((line) => line.includes(`stopping worker ${waiter.id}: no queued job while it waits for a GPU`)),
        lines.join("\n"),
      ).toHaveLength(1);
    } finally {
      await q.dispose();
    }
  });
});

describe("an endpoint asking for more GPUs per worker than the machine has", { timeout: 90_000 }, () => {
  it("its jobs fail with GPUS_UNAVAILABLE and the remedy, and /health says why", async () => {
    const q = await oneGpu();
    try {
      const spec = { name: "work", workersMin: 0, workersMax: 1, gpuIds: "AMPERE_16", gpuCount: 2 };
      const id = (await deploy(q, artifact, [spec])).endpoints.work!.id;
      const job = (await api(q, "POST", `/v2/${id}/run`, { input: { op: "echo", value: 1 } })).body.id;
      const failed = await waitFinal(q, id, job, 60_000);
      expect(failed.status).toBe("FAILED");
      expect(JSON.parse(failed.error)).toMatchObject({
        error_type: "GPUS_UNAVAILABLE",
        error_message: expect.stringContaining('"work" asks for 2 GPUs per worker; this machine has 1'),
        remedy: expect.stringContaining("gpu_count=1"),
      });
      expect((await api(q, "GET", `/v2/${id}/health`)).body.error).toMatchObject({ error_type: "GPUS_UNAVAILABLE" });
    } finally {
      await q.dispose();
    }
  });
});
