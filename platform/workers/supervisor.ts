/**
 * The worker supervisor: each worker's life cycle — start, ready, busy, stop, exit, unhealthy, timed
 * out — and the jobs a worker hands back when it exits or goes silent. Where a worker runs is its
 * backend's (./backends/backend.ts): the supervisor has its launch plan made (./launch-plan.ts) and
 * hands it to the local backend (./backends/local.ts) or the remote one (Ray), which report back
 * started, output and exited. Its parts: why workers cannot serve and the restart backoff
 * (./worker-problems.ts), the worker's record and signals (./worker-process.ts, ./worker-signals.ts),
 * LB probing (./lb-health.ts), GPUs (./gpu-assign.ts), ready waiters (./ready-waiters.ts).
 */
import type { Store, EndpointRecord } from "../store/index.ts";
import type { JobQueue } from "../queue/queue.ts";
import type { JobView } from "../queue/views.ts";
import { newSecret } from "../_ids.ts";
import { activeBuildId, endpointRetries, workerConfigKey } from "./target.ts";
import type { RetryPolicy } from "../../core/endpoint-schema.ts";
import { WorkerGpus } from "./gpu-assign.ts";
import { forgetLbTarget } from "./lb-target.ts";
import type { WorkerInfo, WorkerState } from "./worker-info.ts";
import { LbHealth } from "./lb-health.ts";
import { WorkerProblems } from "./worker-problems.ts";
import { wakeSignals } from "./worker-signals.ts";
import { newWorker, signalWorker, stopProcess, type WorkerEnvDeps } from "./worker-process.ts";
import { ReadyWaiters } from "./ready-waiters.ts";
import { WorkerResources, type LimitsView } from "./worker-resources.ts";
import { buildLaunchPlan, type LaunchPlan } from "./launch-plan.ts";
import type { BackendHooks, WorkerBackend } from "./backends/backend.ts";
import { LocalWorkers } from "./backends/local.ts";
import { parseUidRange, WorkerUidPool } from "./uid-pool.ts";
import type { Telemetry } from "../telemetry/telemetry.ts";

export type { WorkerState, WorkerInfo, WorkerError, EndpointProblem } from "./worker-info.ts";

export { RESTART_BACKOFF_MS } from "./restart-policy.ts";

/** The workers' keys, secrets and the API's addresses (./worker-process.ts WorkerEnvDeps), and: */
export interface SupervisorDeps extends WorkerEnvDeps {
  store: Store;
  /** Cold starts and OOM kills go to the metrics (../telemetry/telemetry.ts). */
  telemetry?: Telemetry;
  queue: JobQueue;
  /** The path of the Unix socket bound into sandboxed workers (./worker-channel.ts), if any. */
  channelSocket?: () => string | undefined;
  /** The backend that places the workers it `places` elsewhere (./backends/ray.ts); the others are local processes. */
  remote?: WorkerBackend;
}

export class Supervisor {
  readonly workers = new Map<string, WorkerInfo>();
  /** Which worker holds which GPU (./gpu-assign.ts). */
  readonly gpus: WorkerGpus;
  private readonly readyWaiters = new ReadyWaiters();
  /** Why an endpoint's workers cannot serve, backoff after early exits, and the jobs that fail for it (./worker-problems.ts). */
  readonly problems: WorkerProblems;
  /** LB workers' readiness and liveness by GET /ping (./lb-health.ts). */
  private readonly lb: LbHealth;
  /** Each worker's memory, CPU, process and /tmp limits, and its cgroup (./worker-resources.ts). */
  readonly resources: WorkerResources;
  /** Each app's host user, where the platform runs as root (./uid-pool.ts). */
  readonly uids?: WorkerUidPool;
  /** Processes on this machine: every worker the remote backend does not place, and `svc shell`'s. */
  readonly local: LocalWorkers;
  /** The backend that places some workers elsewhere (Ray), if any. */
  readonly remote?: WorkerBackend;
  private readonly workerLog = (w: WorkerInfo, line: string) => this.platformLog(w.endpointId, w.id, line);
  private closed = false;
  /** The platform is stopping gracefully: no worker starts, running ones finish their jobs (drain). */
  private draining = false;

  constructor(private readonly deps: SupervisorDeps) {
    this.gpus = new WorkerGpus(deps.options.gpuMachine);
    this.resources = new WorkerResources(deps.options, deps.options.log);
    const range = parseUidRange(deps.options.workerUids);
    if (process.getuid?.() === 0) this.uids = new WorkerUidPool(deps.options.dataDir, range);
    const parts = { ...deps, gpus: this.gpus, resources: this.resources, uids: this.uids, configKey: (e: EndpointRecord) => this.configKey(e) };
    this.local = new LocalWorkers({ ...parts, log: this.workerLog, endpointLog: (endpointId, line) => this.platformLog(endpointId, "platform", line) });
    this.remote = deps.remote;
    this.problems = new WorkerProblems({ ...parts, log: (endpointId, workerId, line) => this.platformLog(endpointId, workerId, line) });
    const lbHooks = {
      workers: () => this.workers.values(),
      ready: (w: WorkerInfo) => this.markReady(w),
      unhealthy: (w: WorkerInfo, why: string) => this.markUnhealthy(w, why),
    };
    this.lb = new LbHealth(lbHooks, deps.options.pingIntervalS);
  }

  forEndpoint(endpointId: string): WorkerInfo[] {
    const out: WorkerInfo[] = [];
    for (const w of this.workers.values()) if (w.endpointId === endpointId) out.push(w);
    return out;
  }

  state(w: WorkerInfo): WorkerState {
    if (w.unhealthy || w.failure) return "unhealthy";
    if (!w.ready) return this.gpus.waiting(w.id) || w.remote?.unplaced ? "throttled" : "initializing"; // throttled: waits for a GPU or a place
    return this.busy(w) ? "running" : "idle";
  }

  busy(w: WorkerInfo): boolean {
    return w.inFlight > 0 || this.deps.queue.jobsOf(w.id).size > 0;
  }

  configKey(endpoint: EndpointRecord): string {
    return workerConfigKey(this.deps.store, endpoint);
  }

  /** The endpoint's declared retries (./target.ts): asked only when a job fails. */
  retryPolicy(endpointId: string): RetryPolicy | undefined {
    return endpointRetries(this.deps.store, endpointId);
  }

  /** Takes work only from workers of the endpoint's current build and settings. */
  takesWork(w: WorkerInfo): boolean {
    return !w.stopping && !w.unhealthy && !w.outdated;
  }

  /** A busy worker of an earlier build or settings: it finishes what it runs and gets nothing new. */
  markOutdated(w: WorkerInfo): void {
    if (w.outdated) return;
    w.outdated = true;
    this.deps.queue.releaseTakers(w.id);
  }

  /** Can a worker be started for this endpoint now (it has a build; not backing off after early exits)? */
  canStart(endpoint: EndpointRecord, now = Date.now()): boolean {
    if (this.closed || this.draining || !activeBuildId(this.deps.store, endpoint)) return false;
    return !this.problems.backingOff(endpoint, now);
  }

  /** The limits a worker of the endpoint gets (a live worker's, else as the next would get them), and which hold. */
  limitsOf(endpoint: EndpointRecord): LimitsView {
    const live = this.forEndpoint(endpoint.id).find((w) => w.limits && !w.outdated);
    return live?.limits ?? this.local.limitsOf(endpoint);
  }

  /** Its ticket came twice: one of the two is not its launcher, and may hold its token. It ends now, its token with it. */
  ticketReused(w: WorkerInfo): Promise<void> {
    this.platformLog(w.endpointId, w.id, `worker ${w.id}'s launch ticket was presented a second time: the worker is killed (its token ends with it)`);
    return this.kill(w);
  }

  /** The worker called the platform: it is alive. */
  seen(w: WorkerInfo, now = Date.now()): void {
    w.lastSeen = now;
    if (w.type === "QB") this.markReady(w);
  }

  markReady(w: WorkerInfo): void {
    if (w.ready) return;
    w.ready = true;
    this.problems.ready(w);
    w.idleSince = Date.now();
    if (w.spawnedAt) {
      w.coldStartMs = w.idleSince - w.spawnedAt;
      this.platformLog(w.endpointId, w.id, `worker ${w.id} ready ${w.coldStartMs} ms after its process started`);
      this.deps.telemetry?.workerReady(w.endpointId, w.coldStartMs);
    }
    this.readyWaiters.notify(w.endpointId);
    (w.remote ? this.remote : this.local)?.ready?.(w);
  }

  /** Waits until some worker of the endpoint is ready (true) or `ms` runs out (false). */
  waitReady(endpointId: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    return this.readyWaiters.wait(endpointId, ms, signal);
  }

  /** A completed job's line in its worker's logs, written here: not a pipe write and wake-up per job (docs/platform.md, "Hot path"). */
  jobCompleted(job: JobView): void {
    if (!job.workerId || job.startedAt === null || job.finishedAt === null) return;
    this.platformLog(job.endpointId, job.workerId, `job ${job.id}: completed in ${((job.finishedAt - job.startedAt) / 1000).toFixed(2)} s`);
  }

  /** A job left the worker: it may be idle now. */
  released(workerId: string): void {
    const w = this.workers.get(workerId);
    if (w && !this.busy(w)) w.idleSince = Date.now();
  }

  sendCancel(workerId: string, jobId: string): void {
    const w = this.workers.get(workerId);
    if (!w || w.exited) return;
    w.cancel.push(jobId);
    wakeSignals(w);
  }

  /** Starts one worker for the endpoint (asynchronously); undefined when it cannot start. */
  start(endpoint: EndpointRecord): WorkerInfo | undefined {
    if (!this.canStart(endpoint)) return undefined;
    const token = newSecret("wkt_");
    const w = newWorker(endpoint, this.configKey(endpoint), token);
    this.workers.set(w.id, w);
    void this.place(endpoint, w, token);
    return w;
  }

  /** Its backend places it from its launch plan, and reports back through the hooks. */
  private async place(endpoint: EndpointRecord, w: WorkerInfo, token: string): Promise<void> {
    const backend = this.remote?.places(endpoint) ? this.remote : this.local;
    try {
      const plan = await this.planFor(endpoint, w, token, backend);
      await backend.start(plan, w, this.hooksOf(w, plan));
    } catch (error) {
      this.problems.notStarted(w, error as Error, this.closed);
      this.onExit(w);
    }
  }

  /** The launch plan of worker `w` (or `svc shell`'s: ./shell.ts), made for the backend that places it. */
  planFor(endpoint: EndpointRecord, w: WorkerInfo, token: string, backend: WorkerBackend = this.local): Promise<LaunchPlan> {
    const deps = { ...this.deps, uids: this.uids, log: this.workerLog };
    return buildLaunchPlan(deps, endpoint, w, token, activeBuildId(this.deps.store, endpoint), backend.reach());
  }

  /** What a backend reports of worker `w`. */
  private hooksOf(w: WorkerInfo, plan: LaunchPlan): BackendHooks {
    const { store } = this.deps;
    return {
      log: (line) => this.platformLog(w.endpointId, w.id, line),
      output: (line) => store.logs.append(w.endpointId, w.id, line),
      started: (pid, spawnedAt) => {
        w.spawnedAt = spawnedAt;
        store.workers.started(w.id, w.endpointId, plan.target.build.id, pid);
        if (w.type === "LB") this.lb.watchStarts();
      },
      exited: (how, outOfMemory) => {
        this.problems.exited(w, how, outOfMemory ?? false);
        this.onExit(w);
      },
      failed: (why) => {
        this.problems.startFailed(w, why);
        this.onExit(w);
      },
      gone: () => w.stopping || w.exited || this.closed,
    };
  }

  private platformLog(endpointId: string, workerId: string, line: string): void {
    this.deps.store.logs.append(endpointId, workerId, `[platform] ${line}`);
  }

  private onExit(w: WorkerInfo): void {
    if (w.exited) return;
    w.exited = true;
    this.workers.delete(w.id);
    this.deps.store.workers.stopped(w.id);
    this.local.release(w); // what it held here: GPUs, its channel, its cgroup
    this.deps.queue.releaseTakers(w.id);
    // At shutdown, running jobs stay IN_PROGRESS in the database: the next start requeues them.
    const held = this.closed || this.draining ? [] : [...this.deps.queue.jobsOf(w.id)];
    if (w.outOfMemory && w.limits)
      this.problems.failOutOfMemory(w, held); // the same job would only end the next worker too
    else if (held.length > 0) this.deps.queue.handBack(w.id, held);
    wakeSignals(w);
    forgetLbTarget(w);
    w.resolveExit();
  }

  /** A job ran past its execution timeout: nothing interrupts a thread, so the worker and every process it
   * started end now; its other jobs go back to the queue for a fresh worker (docs/platform.md, "Resources"). */
  timedOut(workerId: string, jobId: string): void {
    const w = this.workers.get(workerId);
    if (!w || w.exited) return;
    this.platformLog(w.endpointId, w.id, `worker ${w.id} ran job ${jobId} past its execution timeout: ending the worker and its processes`);
    const held = [...this.deps.queue.jobsOf(w.id)];
    if (held.length > 0) this.deps.queue.handBack(w.id, held);
    void this.kill(w);
  }

  /** Graceful stop: `stop` signal (QB) or SIGTERM (LB), then SIGTERM/SIGKILL after the grace periods. */
  stop(w: WorkerInfo, reason: string): Promise<void> {
    if (w.stopping || w.exited) return w.exit;
    w.stopping = true;
    this.gpus.cancel(w.id); // one still waiting for a GPU stops waiting
    this.platformLog(w.endpointId, w.id, `stopping worker ${w.id}: ${reason}`);
    this.deps.queue.releaseTakers(w.id);
    const graceful = w.type === "QB" && w.ready;
    if (graceful) {
      w.stop = true;
      wakeSignals(w);
    }
    stopProcess(w, graceful, this.deps.options);
    return w.exit;
  }

  /** Kills at once, with every process of its cgroup (unhealthy, timed out, deleted endpoint at shutdown). */
  kill(w: WorkerInfo): Promise<void> {
    w.stopping = true;
    this.gpus.cancel(w.id);
    if (w.cgroup) void w.cgroup.killAll();
    if (w.proc && w.proc.exitCode === null && !w.exited) signalWorker(w, "SIGKILL");
    else if (!w.proc) {
      signalWorker(w, "SIGKILL"); // a remote worker: its backend stops it; its token ends here
      this.onExit(w);
    }
    return w.exit;
  }

  /** Liveness: QB workers silent for 3 ping intervals are unhealthy (killed, jobs handed back). */
  sweep(now = Date.now()): void {
    const silentMs = 3 * this.deps.options.pingIntervalS * 1000;
    for (const w of this.workers.values()) {
      if (w.exited || w.unhealthy || w.type !== "QB" || !w.ready) continue;
      if (w.openPolls > 0) {
        w.lastSeen = now;
        continue;
      }
      if (now - w.lastSeen > silentMs) this.markUnhealthy(w, `no heartbeat for ${Math.round((now - w.lastSeen) / 1000)} s`);
    }
  }

  private markUnhealthy(w: WorkerInfo, why: string): void {
    w.unhealthy = true;
    this.platformLog(w.endpointId, w.id, `worker ${w.id} is unhealthy: ${why}`);
    const held = [...this.deps.queue.jobsOf(w.id)];
    if (held.length > 0) this.deps.queue.handBack(w.id, held);
    void this.kill(w);
  }

  async stopEndpoint(endpointId: string): Promise<void> {
    this.local.forget(endpointId);
    await Promise.all(this.forEndpoint(endpointId).map((w) => this.stop(w, "endpoint deleted")));
  }

  /**
   * A graceful platform stop's first step, while the API serves: no worker starts or takes a job; each finishes and reports its
   * running jobs within the grace periods, then exits; what one holds when killed is requeued at the next start (docs/platform.md, "Stopping").
   */
  async drain(): Promise<void> {
    this.draining = true;
    const { stopGraceMs, killGraceMs } = this.deps.options;
    const late = new Promise<void>((resolve) => setTimeout(resolve, stopGraceMs + killGraceMs + 1000).unref()); // a process SIGKILL cannot end: close() goes on
    await Promise.race([Promise.all([...this.workers.values()].map((w) => this.stop(w, "the platform is stopping"))), late]);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.lb.close();
    const all = [...this.workers.values()];
    for (const w of all) {
      w.stopping = true;
      signalWorker(w, "SIGTERM");
    }
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, 3000).unref());
    await Promise.race([Promise.all(all.map((w) => w.exit)), deadline]);
    for (const w of all) if (!w.exited) await this.kill(w).catch(() => undefined);
    for (const w of all) this.onExit(w);
    await this.local.close();
    await this.remote?.close();
  }
}
