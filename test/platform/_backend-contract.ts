/**
 * The worker-backend seam's shared cases (platform/workers/backends/backend.ts): every backend gets
 * the same launch plan, and the supervisor's life cycle must not tell them apart: a worker starts and
 * is ready, its process killed mid-job hands its job back to a fresh worker, it stops when told, and
 * an exit before ready backs its endpoint off with the reason on /health. Run against the local
 * backend by backends.test.ts and against the Ray backend by ray-workers.test.ts, on the cluster that
 * file starts anyway (a Ray cluster is the suite's costliest start-up). Nothing is faked.
 */
import { readdir, readFile } from "node:fs/promises";
import { basename } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkerInfo } from "../../platform/workers/worker-info.ts";
import { buildAppArtifact, saveImageEndpoint } from "./_app-artifact.ts";
import { api, buildFixtureArtifact, deploy, uploadArtifact, waitFinal, waitFor, type TestPlatform } from "./_support.ts";

export interface BackendUnderTest {
  platform: TestPlatform;
  /** Where the backend says the worker runs (its handle on the worker's record). */
  placement(w: WorkerInfo): string | undefined;
  /** The backend's own word that the worker's run ended. */
  ended(w: WorkerInfo): Promise<boolean>;
  dispose(): Promise<void>;
}

/**
 * The worker's Python processes on this machine (a Ray node here is this machine too): its id and a
 * worker token in their environment (Ray's own processes for the job and the launcher hold the ticket only).
 */
async function pythonsOf(workerId: string): Promise<number[]> {
  const found: number[] = [];
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const argv0 = (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).split("\0")[0] ?? "";
    if (!/^python/.test(basename(argv0))) continue;
    const env = (await readFile(`/proc/${pid}/environ`, "utf8").catch(() => "")).split("\0");
    if (env.includes(`SVC_WORKER_ID=${workerId}`) && env.some((v) => v.startsWith("SVC_WORKER_TOKEN="))) found.push(Number(pid));
  }
  return found;
}

const EXITS_AT_IMPORT = "import os\n\nos._exit(3)\n";

/** The shared cases against the backend `make` starts (a platform of its own, disposed at the end). */
export function describeBackend(name: string, make: () => Promise<BackendUnderTest>): void {
  describe(`the ${name} backend`, { timeout: 180_000 }, () => {
    let b: BackendUnderTest;
    let p: TestPlatform;
    let workId: string;
    const logsOf = (endpointId: string) => {
      p.context.store.logs.flush();
      return p.context.store.logs.tail(endpointId, 500);
    };
    const live = (endpointId: string) => p.context.supervisor.forEndpoint(endpointId).filter((w) => !w.stopping && !w.exited);

    beforeAll(async () => {
      b = await make();
      p = b.platform;
      const deployed = await deploy(p, await buildFixtureArtifact(), [{ name: "work", workersMax: 2, idleTimeout: 600 }]);
      workId = deployed.endpoints.work!.id;
    }, 240_000);
    afterAll(() => b?.dispose(), 60_000);

    it("starts a worker where it places it, and the worker is ready once it takes a job", async () => {
      const r = await api(p, "POST", `/v2/${workId}/runsync`, { input: { op: "echo", value: "placed" } });
      const out = r.body.status === "COMPLETED" ? r.body : await waitFinal(p, workId, r.body.id, 120_000);
      expect(out).toMatchObject({ status: "COMPLETED", output: { echo: "placed" } });
      const w = live(workId)[0]!;
      expect(b.placement(w), "the backend's handle on the worker").toBeDefined();
      expect(w.ready).toBe(true);
      expect(w.spawnedAt).toBeGreaterThanOrEqual(w.startedAt); // the backend said when it started
      expect(p.context.store.workers.live().map((row) => row.id)).toContain(w.id);
      expect(logsOf(workId).some((l) => l.includes(`worker ${w.id} ready `) && l.includes(" ms after its process started"))).toBe(true);
      expect(await pythonsOf(w.id)).toHaveLength(1);
    });

    it("a worker's process killed mid-job hands the job back, and a fresh worker finishes it", async () => {
      const run = await api(p, "POST", `/v2/${workId}/run`, { input: { op: "sleep", seconds: 3 } });
      const first = await waitFor(
        "the job to run on a worker",
        async () => {
          const s = (await api(p, "GET", `/v2/${workId}/status/${run.body.id}`)).body;
          return s.status === "IN_PROGRESS" && s.workerId ? p.context.supervisor.workers.get(s.workerId) : undefined;
        },
        120_000,
      );
      const [python] = await pythonsOf(first.id);
      expect(python).toBeDefined();
      process.kill(python!, "SIGKILL");
      const final = await waitFinal(p, workId, run.body.id, 150_000);
      expect(final).toMatchObject({ status: "COMPLETED", output: { slept: 3 } });
      expect(final.workerId).not.toBe(first.id);
      expect(first.exited).toBe(true);
      expect(logsOf(workId).some((l) => l.includes(`worker ${first.id} exited (`))).toBe(true);
    });
    it("stops a worker when told: its run ends, its process is gone, its record is stopped", async () => {
      const w = live(workId)[0]!;
      await p.context.supervisor.stop(w, "the test stops it");
      expect(w.exited).toBe(true);
      expect(p.context.store.workers.live().map((row) => row.id)).not.toContain(w.id);
      await waitFor("the backend to say the run ended", () => b.ended(w), 30_000);
      await waitFor("its Python process to be gone", async () => (await pythonsOf(w.id)).length === 0, 15_000);
      expect(logsOf(workId).some((l) => l.includes(`worker ${w.id} exited (`))).toBe(true);
    });

    it("an exit before ready backs the endpoint off and shows why on its /health", async () => {
      const { buildId } = await uploadArtifact(
        p,
        await buildAppArtifact({ "app/__init__.py": "", "app/quits.py": EXITS_AT_IMPORT }, [{ name: "quits", module: "app.quits", functions: ["quits"] }]),
        "quits-app",
      );
      const e = await saveImageEndpoint(p, buildId, { name: "quits" });
      const run = await api(p, "POST", `/v2/${e.id}/run`, { input: {} });
      expect(run.status).toBe(200);
      const exitLine = await waitFor(
        "the early exit's line",
        () => logsOf(e.id).find((l) => /exited \(.*\) before it was ready; next start in 1 s/s.test(l)),
        120_000,
      );
      expect(exitLine).toMatch(/\[platform\] worker wk_\w+ exited/);
      const health = await api(p, "GET", `/v2/${e.id}/health`);
      expect(health.body.error).toMatchObject({ error_type: "WorkerStartError", error_message: expect.stringContaining("before it was ready") });
      await api(p, "POST", `/v2/${e.id}/purge-queue`); // no job left: no restart
    });
  });
}
