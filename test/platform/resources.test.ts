/**
 * Resources (issue 27), end to end: fixtures/resources/abuse is deployed with `svc deploy`'s code
 * to a real platform with small worker limits (256 MB, 64 processes: the `workerLimits` option,
 * bounded for CI) next to another app (fixtures/containment/victim), and takes memory, processes,
 * /tmp, CPU and time past its limits. Each row asserts the error the user sees, and that the other
 * app's runsync and /health kept answering meanwhile. Needs root (cgroups) and bwrap, as CI has.
 */
import { cp, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createConnection, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { bwrapUsable } from "../../platform/workers/sandbox.ts";
import { api, gqlOk, startTestPlatform, waitFinal, waitFor, type TestPlatform } from "./_support.ts";
import { bystander, type BystanderReport } from "./_bystander.ts";

const FIXTURES = new URL("../../fixtures/", import.meta.url).pathname;
const MEMORY_MB = 256;
const PIDS = 64;
const asRoot = process.getuid?.() === 0;
/** A small log rate and retained size: the flood below is 64 MB. */
const LOG_RATE = { perSecond: 256 * 1024, burst: 1024 * 1024 };
const LOG_CHARS = 4 * 1024 * 1024;
/** Small connection caps, so that the flood stays light in CI. */
const CONNECTIONS = { total: 300, perClient: 10, perWorker: 50, firstRequestMs: 2000 };

/** One line per row for the report (`SVC_RESOURCE_FIGURES=1` prints them). */
const figure = (row: string, bound: string, errorMs: number, other: BystanderReport) => {
  if (process.env.SVC_RESOURCE_FIGURES)
    process.stderr.write(
      `[figure] ${row}: bound ${bound}; user's error after ${Math.round(errorMs)} ms; other app /health p99 ${other.healthP99Ms.toFixed(1)} ms (${other.healths} calls), runsync p99 ${other.runsyncP99Ms.toFixed(1)} ms\n`,
    );
};

/** The CPU quota (in CPUs) of the cgroup a worker's processes are in, read from the host's side. */
async function cpuQuotaOf(workerId: string): Promise<number | undefined> {
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid) || !(await readFile(`/proc/${pid}/environ`, "utf8").catch(() => "")).includes(`SVC_WORKER_ID=${workerId}\u0000`)) continue;
    const groups = await readFile(`/proc/${pid}/cgroup`, "utf8");
    const v1 = /^\d+:(?:[^:]*,)?cpu(?:,[^:]*)?:(.*)$/m.exec(groups)?.[1];
    if (v1)
      return (
        Number(await readFile(`/sys/fs/cgroup/cpu${v1}/cpu.cfs_quota_us`, "utf8")) / Number(await readFile(`/sys/fs/cgroup/cpu${v1}/cpu.cfs_period_us`, "utf8"))
      );
    const [quota, period] = (await readFile(`/sys/fs/cgroup${/^0::(.*)$/m.exec(groups)![1]}/cpu.max`, "utf8")).split(" ").map(Number);
    return quota! / period!;
  }
  return undefined;
}

describe.runIf(process.platform === "linux" && asRoot)("a worker gets what its flavour says", () => {
  let p: TestPlatform;
  let client: PlatformClient;
  let hog: string;
  let lb: string;
  let victim: string;
  const roots: string[] = [];
  const logger = createLogger("error", () => undefined);

  const deployFixture = async (path: string) => {
    const root = await mkdtemp(join(tmpdir(), "svc-resources-"));
    roots.push(root);
    await cp(join(FIXTURES, path), root, { recursive: true });
    return (await runDeploy({ root, client, logger })).summary.endpoints;
  };
  const runHog = (input: Record<string, unknown>) => api(p, "POST", `/v2/${hog}/runsync`, { input });

  /** Runs `abuse` while the other app's client calls its endpoint; that client must see no failure. */
  const during = async <T>(abuse: () => Promise<T>): Promise<{ result: T; ms: number; other: BystanderReport }> => {
    const other = bystander(p, victim);
    const start = performance.now();
    const result = await abuse();
    const ms = performance.now() - start;
    const report = await other.stop();
    expect(report.failures).toEqual([]);
    expect(report.runsyncs).toBeGreaterThan(0);
    return { result, ms, other: report };
  };

  beforeAll(async () => {
    p = await startTestPlatform({
      rateLimits: false,
      workerLimits: { memoryMb: MEMORY_MB, pids: PIDS },
      connectionLimits: CONNECTIONS,
      logRate: LOG_RATE,
      logCharsPerEndpoint: LOG_CHARS,
    });
    client = createPlatformClient(p);
    victim = (await deployFixture("containment/victim")).find((e) => e.name === "vault")!.id;
    const abuse = await deployFixture("resources/abuse");
    hog = abuse.find((e) => e.name === "hog")!.id;
    lb = abuse.find((e) => e.name === "lb")!.id;
    const warm = await api(p, "POST", `/v2/${victim}/runsync`, { input: {} });
    expect(warm.body.status).toBe("COMPLETED");
  }, 120_000);
  afterAll(async () => {
    await p?.dispose();
    for (const dir of roots) await rm(dir, { recursive: true, force: true });
  });

  it("says at start which limits hold, and shows them in /health and GET /platform/limits", async () => {
    expect(await bwrapUsable()).toBe(true);
    expect(p.logs.find((line) => line.startsWith("worker limits:"))).toMatch(/^worker limits: cgroup v[12] holds memory, pids, cpu per worker/);
    const health = await api(p, "GET", `/v2/${hog}/health`);
    expect(health.body.limits).toMatchObject({
      flavour: "cpu3c-1-2",
      memoryBytes: MEMORY_MB * 1024 ** 2,
      vcpus: 1,
      pids: PIDS,
      tmpBytes: (MEMORY_MB / 2) * 1024 ** 2,
      enforced: ["memory", "pids", "cpu", "tmp"],
    });
    const status = await api(p, "GET", "/platform/limits");
    expect(status.body.cgroups).toMatchObject({ controllers: ["memory", "pids", "cpu"] });
    expect(
      status.body.workers.some((w: { endpointName: string; limits: { flavour: string } }) => w.endpointName === "vault" && w.limits.flavour === "cpu3c-2-4"),
    ).toBe(true);
  }, 60_000);

  it("fails a job past the flavour's memory with WORKER_OUT_OF_MEMORY, and a fresh worker takes the next one", async () => {
    const before = await runHog({ op: "ok" });
    const { result, ms, other } = await during(() => runHog({ op: "memory", step_mb: 32, total_mb: 2048 }));
    expect(result.body.status).toBe("FAILED");
    const error = JSON.parse(result.body.error);
    expect(error).toMatchObject({ error_type: "WORKER_OUT_OF_MEMORY" });
    expect(error.error_message).toContain(`limited to ${MEMORY_MB} MB`);
    expect(error.error_message).toContain("cpu3c-1-2");
    const after = await runHog({ op: "ok" });
    expect(after.body.status).toBe("COMPLETED");
    expect(after.body.workerId).not.toBe(before.body.workerId);
    figure("memory", `${MEMORY_MB} MB`, ms, other);
  }, 60_000);

  it("refuses processes past the pid limit with EAGAIN", async () => {
    const { result, ms, other } = await during(() => runHog({ op: "fork", count: 2000 }));
    expect(result.body.status).toBe("COMPLETED");
    expect(result.body.output.refused).toBe("EAGAIN");
    expect(result.body.output.forked).toBeLessThan(PIDS);
    figure("pids", `${PIDS} processes`, ms, other);
  }, 60_000);

  it("bounds /tmp at half the worker's memory: ENOSPC past it", async () => {
    const { result, ms, other } = await during(() => runHog({ op: "tmp", total_mb: 1024 }));
    expect(result.body.status).toBe("COMPLETED");
    expect(result.body.output.refused).toBe("ENOSPC");
    expect(result.body.output.written_mb).toBeLessThanOrEqual(MEMORY_MB / 2);
    figure("/tmp", `${MEMORY_MB / 2} MB`, ms, other);
  }, 60_000);

  it("holds the flavour's vCPUs as a CPU quota", async () => {
    const { result, other, ms } = await during(() => runHog({ op: "cpu", seconds: 2, threads: 3 }));
    expect(result.body.status).toBe("COMPLETED");
    expect(result.body.output.cpus).toBeLessThan(1.25); // cpu3c-1-2: one vCPU, whatever the machine has
    // ...and the quota is the kernel's, on the worker's own process (a loaded machine alone would also keep it under)
    expect(await cpuQuotaOf(result.body.workerId)).toBe(1);
    figure("cpu", `1 vCPU (used ${result.body.output.cpus.toFixed(2)})`, ms, other);
  }, 60_000);

  it("ends the worker's whole process tree when a job times out, and a fresh worker takes the next job", async () => {
    const before = await runHog({ op: "ok" });
    const sleepers = async () => {
      const found: number[] = [];
      for (const pid of await readdir("/proc")) {
        if (!/^\d+$/.test(pid)) continue;
        const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
        if (
          cmdline === "sleep\u0000400\u0000" &&
          (await readFile(`/proc/${pid}/environ`, "utf8").catch(() => "")).includes(`SVC_WORKER_ID=${before.body.workerId}`)
        )
          found.push(Number(pid));
      }
      return found;
    };
    const { result, ms, other } = await during(async () => {
      const job = await api(p, "POST", `/v2/${hog}/run`, { input: { op: "orphan", seconds: 60 } });
      await waitFor("the job's two `sleep 400` to start", async () => (await sleepers()).length === 2, 10_000, 100);
      return waitFinal(p, hog, job.body.id, 15_000);
    });
    expect(result.status).toBe("TIMED_OUT");
    const ended = performance.now();
    await waitFor("the timed-out worker's processes to end", async () => (await sleepers()).length === 0, 5000, 50);
    const goneMs = performance.now() - ended;
    const after = await runHog({ op: "ok" });
    expect(after.body.status).toBe("COMPLETED");
    expect(after.body.workerId).not.toBe(before.body.workerId);
    figure("timeout", `execution_timeout 5 s, tree gone ${Math.round(goneMs)} ms after the status`, ms, other);
  }, 60_000);

  it("bounds a worker's connections to the platform by its own processes, and keeps answering everyone else", async () => {
    // A sandboxed worker reaches the platform only through its runtime's relay, two threads a connection in its own cgroup.
    const { result, ms, other } = await during(() => runHog({ op: "connections", count: 150, seconds: 0.5 }));
    expect(result.body.status).toBe("COMPLETED");
    // connections did open and stay (a relay refusing every one would pass the bound alone), up to the bound
    expect(result.body.output.opened).toBeGreaterThan(0);
    expect(result.body.output.alive).toBeGreaterThan(0);
    expect(result.body.output.alive).toBeLessThanOrEqual(PIDS / 2);
    figure("a worker's connections", `${PIDS} processes: ${result.body.output.alive} of 150 alive`, ms, other);
  }, 60_000);

  it("closes connections that send no request, and keeps at most its total open", async () => {
    const { port } = new URL(p.url);
    const {
      result: closed,
      ms,
      other,
    } = await during(async () => {
      const sockets = await Promise.all(
        Array.from(
          { length: 1000 },
          () =>
            new Promise<Socket>((resolve) => {
              const socket = createConnection({ host: "127.0.0.1", port: Number(port) }, () => resolve(socket));
              socket.on("error", () => resolve(socket));
            }),
        ),
      );
      const open = () => sockets.filter((s) => !s.destroyed && !s.readableEnded).length;
      const ends = sockets.map((s) => new Promise<void>((resolve) => (s.destroyed ? resolve() : s.once("close", () => resolve()))));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const atOnce = open();
      await Promise.race([Promise.all(ends), new Promise((resolve) => setTimeout(resolve, CONNECTIONS.firstRequestMs + 3000))]);
      const left = open();
      for (const s of sockets) s.destroy();
      return { atOnce, left };
    });
    expect(closed.atOnce).toBeLessThanOrEqual(CONNECTIONS.total + 511); // the rest wait in the kernel's listen backlog (511), not in the platform
    expect(closed.left).toBe(0);
    figure(
      "idle connections",
      `${CONNECTIONS.total} open at most (${closed.atOnce} of 1000 after 0.3 s), silent ones closed after ${CONNECTIONS.firstRequestMs} ms`,
      ms,
      other,
    );
  }, 60_000);

  it("answers a client's connections past its cap with 429 CONNECTION_LIMIT", async () => {
    const { result, ms, other } = await during(() => runHog({ op: "connections", count: 30, seconds: 0, send: true }));
    expect(result.body.status).toBe("COMPLETED");
    const statuses = result.body.output.statuses as Record<string, number>;
    expect(statuses["200"]).toBeLessThanOrEqual(CONNECTIONS.perClient);
    expect(statuses["429"]).toBeGreaterThanOrEqual(1);
    figure("connections per client", `${CONNECTIONS.perClient} per key (${JSON.stringify(statuses)})`, ms, other);
  }, 60_000);

  it("holds a thousand slow connections on an LB worker's socket with no thread each, and its routes keep answering", async () => {
    expect((await api(p, "GET", `/lb/${lb}/hello`)).body).toEqual({ ok: true });
    const worker = p.context.supervisor.forEndpoint(lb).find((w) => w.ready && w.pid)!;
    const threads = async () => Number(/^Threads:\s+(\d+)/m.exec(await readFile(`/proc/${worker.pid}/status`, "utf8"))![1]);
    const before = await threads();
    const { result, ms, other } = await during(async () => {
      const target = worker.lbSocket ? { path: worker.lbSocket } : { host: "127.0.0.1", port: worker.lbPort! };
      const sockets = await Promise.all(
        Array.from(
          { length: 1000 },
          (_, i) =>
            new Promise<Socket>((resolve) => {
              const socket = createConnection(target, () => {
                if (i % 2 === 0) socket.write("POST /hello HTTP/1.1\r\nContent-Le"); // half a request, never finished
                resolve(socket);
              });
              socket.on("error", () => resolve(socket));
            }),
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      const during = await threads();
      const start = performance.now();
      const answer = await api(p, "GET", `/lb/${lb}/hello`);
      const answerMs = performance.now() - start;
      for (const socket of sockets) socket.destroy();
      return { during, answer, answerMs };
    });
    expect(result.answer.body).toEqual({ ok: true });
    expect(result.during).toBeLessThanOrEqual(before + 8); // the held connections cost no thread (the stdlib's server: one each)
    figure("LB slow connections", `1000 held, worker threads ${before} → ${result.during}; a route answered in ${result.answerMs.toFixed(0)} ms`, ms, other);
  }, 60_000);

  it("keeps a worker's logs within its rate and the endpoint's retained size, and marks what it dropped", async () => {
    const cpu = process.cpuUsage(); // the platform runs in this process (with the test and its other client)
    const { result, ms, other } = await during(() => runHog({ op: "logs", total_mb: 64 }));
    const cpuS = (process.cpuUsage(cpu).user + process.cpuUsage(cpu).system) / 1e6;
    expect(result.body.status).toBe("COMPLETED");
    const logs = async () =>
      (await gqlOk<{ workerLogs: string[] }>(p, "query($e: String!) { workerLogs(endpointId: $e, limit: 10000) }", { e: hog })).workerLogs;
    const marker = await waitFor(
      "the dropped lines' marker",
      async () => (await logs()).find((line) => /line\(s\) of this worker's output dropped \(\d+ MB\): over its log rate of 256 KB\/s/.test(line)),
      10_000,
      200,
    );
    expect(marker).toContain("[platform]");
    const kept = await logs();
    const chars = kept.reduce((sum, line) => sum + line.length, 0);
    expect(chars).toBeLessThanOrEqual(LOG_CHARS * 1.25 + 2 * 1024 * 1024); // the retained size, its slack, a batch
    expect(kept.filter((line) => line.endsWith("x".repeat(99))).length).toBeLessThan((64 * 1024 * 1024) / 100 / 4); // most of the flood was dropped, never stored
    figure(
      "logs",
      `${LOG_RATE.perSecond / 1024} KB/s per worker, ${LOG_CHARS / 1024 ** 2} MB per endpoint (${kept.length} lines kept of ${result.body.output.lines}); this process's CPU ${((cpuS / 64) * 1000).toFixed(1)} ms per MB written`,
      ms,
      other,
    );
  }, 60_000);

  it("leaves no cgroup behind when the platform stops", async () => {
    const own = /^\d+:memory:(.*)$/m.exec(await readFile("/proc/self/cgroup", "utf8"))?.[1];
    const parent = own === undefined ? "/sys/fs/cgroup" : `/sys/fs/cgroup/memory${own}`;
    const ours = async () => (await readdir(parent).catch(() => [])).filter((name) => name.startsWith(`svc-${process.pid}-`));
    expect((await ours()).length).toBeGreaterThan(0);
    await p.close();
    expect(await ours()).toEqual([]);
  }, 30_000);
});

describe.runIf(process.platform === "linux")("--isolation strict where no cgroup can be made", () => {
  let p: TestPlatform;
  const roots: string[] = [];
  beforeAll(async () => {
    p = await startTestPlatform({ rateLimits: false, isolation: "strict", cgroups: false });
  });
  afterAll(async () => {
    await p?.dispose();
    for (const dir of roots) await rm(dir, { recursive: true, force: true });
  });

  it("says so at start and starts no worker: the job fails with WORKER_LIMITS_UNAVAILABLE's message", async () => {
    expect(p.logs.some((line) => line.includes("worker limits: none hold") && line.includes("no worker will start"))).toBe(true);
    const root = await mkdtemp(join(tmpdir(), "svc-resources-strict-"));
    roots.push(root);
    await cp(join(FIXTURES, "containment/victim"), root, { recursive: true });
    const { summary } = await runDeploy({ root, client: createPlatformClient(p), logger: createLogger("error", () => undefined) });
    const r = await api(p, "POST", `/v2/${summary.endpoints[0]!.id}/runsync`, { input: {} });
    expect(r.body.status).toBe("FAILED");
    expect(JSON.parse(r.body.error)).toMatchObject({
      error_type: "WorkerStartError",
      error_message: expect.stringContaining("Refusing to start a worker without its resource limits"),
    });
  }, 60_000);
});
