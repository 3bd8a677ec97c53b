/**
 * The worker supervisor: starts `python handlers/<endpoint>.py` in a build's unpacked folder,
 * inside its image environment (./image-env.ts), captures its output as worker logs, tracks its
 * state and liveness, and stops it (a `stop` signal, then SIGTERM, then SIGKILL). A worker that
 * exits or goes silent hands its jobs back; one that exits before it is ready is restarted with a
 * capped backoff; one whose module does not import reports it, and the endpoint shows why
 * (docs/platform.md, "A worker that cannot import its module").
 *
 * Its parts live apart: the process (record, variables, signals, stop timers: ./worker-process.ts),
 * output capture (./worker-logs.ts), LB probing (./lb-health.ts), restart backoff and problems
 * (./restart-policy.ts), signals to a worker (./worker-signals.ts), GPUs (./gpu-assign.ts),
 * unrunnable endpoints (./unrunnable.ts), ready waiters (./ready-waiters.ts), resource limits and
 * cgroups (./worker-resources.ts).
 */
import type { ChildProcess } from "node:child_process";
import type { SvcError } from "../../core/errors.ts";
import { join } from "node:path";
import type { Store, EndpointRecord } from "../store/index.ts";
import type { JobQueue } from "../queue/queue.ts";
import type { JobView } from "../queue/views.ts";
import type { ResolvedOptions } from "../options.ts";
import { newSecret, sha256Hex, digestMatches, secretDigest } from "../_ids.ts";
import { BuildUnpacker } from "../artifacts/unpack.ts";
import { defaultPythonForImage } from "./interpreter.ts";
import { declaredRetries, resolveWorkerTarget, type WorkerTarget } from "./target.ts";
import type { RetryPolicy } from "../../core/endpoint-schema.ts";
import { ImageEnvironments, spawnLaunch, type ShellLaunch, type WorkerLaunch } from "./image-env.ts";
import { captureWorkerOutput } from "./worker-logs.ts";
import { WorkerGpus } from "./gpu-assign.ts";
import type { WorkerKeys } from "../worker-keys.ts";
import type { Secrets } from "../secrets.ts";
import { giveVolumeTo, volumeFolderOf } from "../volumes/mount.ts";
import { forgetLbTarget } from "./lb-target.ts";
import { closeChannel, loopbackPorts } from "./worker-channel.ts";
import type { EndpointProblem, WorkerError, WorkerInfo, WorkerState } from "./worker-info.ts";
import { LbHealth } from "./lb-health.ts";
import { RestartPolicy } from "./restart-policy.ts";
import { wakeSignals, waitSignals } from "./worker-signals.ts";
import { newWorker, readChildPid, signalWorker, stopProcess, workerEnv } from "./worker-process.ts";
import { ReadyWaiters } from "./ready-waiters.ts";
import { unrunnable } from "./unrunnable.ts";
import { joinPrefix, WorkerResources, type LimitsView } from "./worker-resources.ts";
import type { RemoteWorkers } from "./backends/backend.ts";
import { remoteLaunch } from "./backends/remote-launch.ts";
import { parseUidRange, WorkerUidPool } from "./uid-pool.ts";
import type { Telemetry } from "../telemetry/telemetry.ts";
import { WarmSpares } from "./warm-spares.ts";

export type { WorkerState, WorkerInfo, WorkerError, EndpointProblem } from "./worker-info.ts";

export { RESTART_BACKOFF_MS } from "./restart-policy.ts";

export interface SupervisorDeps {
  store: Store;
  /** Cold starts and OOM kills go to the metrics (../telemetry/telemetry.ts). */
  telemetry?: Telemetry;
  queue: JobQueue;
  options: ResolvedOptions;
  /** Each worker's PLATFORM_API_KEY, scoped to its app and environment (never the platform's key). */
  workerKeys: WorkerKeys;
  /** Resolves `{{ PLATFORM_SECRET_<name> }}` in the env, here and nowhere else. */
  secrets: Secrets;
  apiBase: () => string;
  /** `@name` of the abstract Unix socket the API also listens on for local workers (Linux), if any. */
  workerSocket?: () => string | undefined;
  /** The path of the Unix socket bound into sandboxed workers (./worker-channel.ts), if any. */
  channelSocket?: () => string | undefined;
  /** Where workers run when not here (./backends/backend.ts: Ray); none: local processes. */
  remote?: RemoteWorkers;
}

/**
 * ~380 lines, over the ~250 a class gets, for a reason: what is left is the worker's life cycle
 * (start, ready, busy, stop, exit, unhealthy, timed out, out of memory), transitions that read and
 * write the same worker records and the same maps; split further, one transition would live apart
 * from the state it changes.
 */
export class Supervisor {
  readonly workers = new Map<string, WorkerInfo>();
  /** Exited workers' channels being closed (./worker-channel.ts): close() waits for them. */
  private readonly channelsClosing = new Set<Promise<void>>();
  private readonly unpacker: BuildUnpacker;
  private readonly images: ImageEnvironments;
  /** Which worker holds which GPU (./gpu-assign.ts). */
  readonly gpus: WorkerGpus;
  private readonly readyWaiters = new ReadyWaiters();
  /** Backoff after early exits, and why an endpoint's workers cannot serve (./restart-policy.ts). */
  private readonly restarts = new RestartPolicy();
  /** LB workers' readiness and liveness by GET /ping (./lb-health.ts). */
  private readonly lb: LbHealth;
  /** Each worker's memory, CPU, process and /tmp limits, and its cgroup (./worker-resources.ts). */
  readonly resources: WorkerResources;
  /** Each app's host user, where the platform runs as root (./uid-pool.ts). */
  readonly uids?: WorkerUidPool;
  /** Sandboxes started ahead for the dev server's endpoints' next workers (./warm-spares.ts). */
  readonly spares: WarmSpares;
  /** Whether workers run in the sandbox (known once one started): its /tmp is sized. */
  private sandboxed?: boolean;
  private closed = false;
  /** Where workers run when not here (Ray), if anywhere. */
  get remote(): RemoteWorkers | undefined {
    return this.deps.remote;
  }
  /** The platform is stopping gracefully: no worker starts, running ones finish their jobs (drain). */
  private draining = false;

  constructor(private readonly deps: SupervisorDeps) {
    this.unpacker = new BuildUnpacker(join(deps.options.dataDir, "builds"));
    this.images = new ImageEnvironments(deps.options.dataDir, (line) => this.log(line), deps.options.isolation);
    this.gpus = new WorkerGpus(deps.options.gpuMachine);
    this.resources = new WorkerResources(deps.options, (line) => this.log(line));
    const range = parseUidRange(deps.options.workerUids);
    if (process.getuid?.() === 0) this.uids = new WorkerUidPool(deps.options.dataDir, range);
    const lbHooks = {
      workers: () => this.workers.values(),
      ready: (w: WorkerInfo) => this.markReady(w),
      unhealthy: (w: WorkerInfo, why: string) => this.markUnhealthy(w, why),
    };
    this.lb = new LbHealth(lbHooks, deps.options.pingIntervalS);
    const sparesLog = (endpointId: string, line: string) => this.platformLog(endpointId, "platform", line);
    this.spares = new WarmSpares({ images: this.images, resources: this.resources, dataDir: deps.options.dataDir, log: sparesLog });
  }

  private get log() {
    return this.deps.options.log;
  }

  /** Stops processes left over by a platform that was killed. */
  killOrphans(): void {
    for (const w of this.deps.store.workers.live()) {
      if (w.pid && w.pid !== process.pid) {
        try {
          process.kill(w.pid, "SIGKILL");
        } catch {
          /* already gone */
        }
      }
    }
    this.deps.store.workers.markAllStopped();
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
    const build = this.buildIdOf(endpoint);
    return sha256Hex(
      JSON.stringify([build, endpoint.type, endpoint.imageName, endpoint.templateId, endpoint.env, endpoint.name, endpoint.networkVolumeId || null]),
    );
  }

  /** An environment's endpoints run its active build (docs/platform.md, "Deploys switch in one step"). */
  buildIdOf(endpoint: EndpointRecord): string | null {
    if (endpoint.environmentId) return this.deps.store.apps.environment(endpoint.environmentId)?.activeBuildId ?? null;
    return endpoint.buildId;
  }

  /** The endpoint's declared retries, read from its build's manifest (only when a job fails: not on the hot path). */
  retryPolicy(endpointId: string): RetryPolicy | undefined {
    const endpoint = this.deps.store.endpoints.get(endpointId);
    const buildId = endpoint && this.buildIdOf(endpoint);
    const build = buildId ? this.deps.store.builds.get(buildId) : undefined;
    return build && declaredRetries(build, endpoint!.name);
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
    if (this.closed || this.draining || !this.buildIdOf(endpoint)) return false;
    return !this.restarts.backingOff(endpoint.id, now, () => this.configKey(endpoint)); // a redeploy starts at once
  }

  /** The limits a worker of the endpoint gets (a live worker's, else as the next would get them), and which hold. */
  limitsOf(endpoint: EndpointRecord): LimitsView {
    const live = this.forEndpoint(endpoint.id).find((w) => w.limits && !w.outdated);
    return live?.limits ?? this.resources.view(this.resources.limitsOf(endpoint, endpoint.gpuIds ? this.gpus.machineCount() : 0), this.sandboxed);
  }

  /** Why the endpoint's current workers cannot serve (its /health `error`), if they cannot. */
  problem(endpoint: EndpointRecord): EndpointProblem | undefined {
    const unrunnable = this.unrunnable(endpoint);
    if (unrunnable) return { ...unrunnable, since: new Date(endpoint.createdAt).toISOString() };
    return this.restarts.problem(endpoint.id, () => this.configKey(endpoint));
  }

  /** Why no worker can ever start for the endpoint (./unrunnable.ts): its jobs fail at once. */
  unrunnable(endpoint: EndpointRecord): WorkerError | undefined {
    return unrunnable(this.deps.store, this.gpus, endpoint);
  }

  /** Fails the queued jobs of an endpoint no worker can start for, saying why in its logs. */
  failUnrunnable(endpoint: EndpointRecord, why: WorkerError): void {
    const failed = this.deps.queue.failQueued(endpoint.id, JSON.stringify(why), why.error_type);
    if (failed > 0) this.platformLog(endpoint.id, "platform", `${failed} job(s) failed: ${why.error_message} ${why.remedy ?? ""}`.trim());
  }

  /** A worker says its endpoint's module does not import: it fails every job; so do the queued ones. */
  reportFailure(w: WorkerInfo, error: WorkerError): void {
    w.failure = error;
    this.restarts.setProblem(w, error);
    const where = error.file ? ` at ${error.file}:${error.line}` : "";
    this.platformLog(w.endpointId, w.id, `worker ${w.id} cannot import its endpoint's module: ${error.error_type}${where}. ${error.remedy ?? ""}`.trim());
    const failed = this.deps.queue.failQueued(w.endpointId, JSON.stringify(error), error.error_type);
    if (failed > 0) this.platformLog(w.endpointId, w.id, `${failed} queued job(s) failed with that error`);
  }

  /** The remote worker whose launch ticket this is (its launcher, or someone who read the ticket). */
  ticketHolder(workerId: string, ticket: string | undefined): WorkerInfo | undefined {
    const w = this.workers.get(workerId);
    return w?.remote && w.ticketDigest && !w.exited && digestMatches(ticket, w.ticketDigest) ? w : undefined;
  }

  /** Its ticket came twice: one of the two is not its launcher, and may hold its token. It ends now, its token with it. */
  ticketReused(w: WorkerInfo): Promise<void> {
    this.platformLog(w.endpointId, w.id, `worker ${w.id}'s launch ticket was presented a second time: the worker is killed (its token ends with it)`);
    return this.kill(w);
  }

  authenticate(workerId: string, token: string | undefined): WorkerInfo | undefined {
    const w = this.workers.get(workerId);
    return w && !w.exited && digestMatches(token, w.tokenDigest) ? w : undefined;
  }

  /** The worker called the platform: it is alive. */
  seen(w: WorkerInfo, now = Date.now()): void {
    w.lastSeen = now;
    if (w.type === "QB") this.markReady(w);
  }

  markReady(w: WorkerInfo): void {
    if (w.ready) return;
    w.ready = true;
    this.restarts.ready(w);
    w.idleSince = Date.now();
    if (w.spawnedAt) {
      w.coldStartMs = w.idleSince - w.spawnedAt;
      this.platformLog(w.endpointId, w.id, `worker ${w.id} ready ${w.coldStartMs} ms after its process started`);
      this.deps.telemetry?.workerReady(w.endpointId, w.coldStartMs);
    }
    this.readyWaiters.notify(w.endpointId);
    this.spares.refill(w.endpointId);
  }

  /** Waits until some worker of the endpoint is ready (true) or `ms` runs out (false). */
  waitReady(endpointId: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    return this.readyWaiters.wait(endpointId, ms, signal);
  }

  /**
   * The line a completed job leaves in its worker's logs. The platform writes it, not the runtime:
   * a line from the worker is a write to its pipe and a wake-up of the platform per job
   * (docs/platform.md, "Hot path"). A failure's line comes from the runtime, with the error.
   */
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

  /** Long poll for signals: `{cancel, stop}` when there is one, else null after `waitMs` (./worker-signals.ts). */
  signals(w: WorkerInfo, waitMs: number, abort?: AbortSignal): Promise<{ cancel: string[]; stop: boolean } | null> {
    return waitSignals(w, waitMs, abort);
  }

  /** Starts one worker for the endpoint (asynchronously); undefined when it cannot start. */
  start(endpoint: EndpointRecord): WorkerInfo | undefined {
    if (!this.canStart(endpoint)) return undefined;
    const token = newSecret("wkt_");
    const w = newWorker(endpoint, this.configKey(endpoint), token);
    this.workers.set(w.id, w);
    void this.spawnWorker(endpoint, w, token);
    return w;
  }

  /**
   * A process in the endpoint's worker environment — its build unpacked, its image environment,
   * GPUs, volume, and env with secrets resolved — spawned: a worker's (spawnWorker), and `svc
   * shell`'s (./shell.ts) with `shell` turning the launch into the shell's command. One path, so a
   * shell gets what a worker gets (sandbox, limits, network).
   */
  async spawnProcess(
    endpoint: EndpointRecord,
    w: WorkerInfo,
    token: string,
    shell?: ShellLaunch,
  ): Promise<{ proc: ChildProcess; launch: WorkerLaunch; target: WorkerTarget }> {
    const { store, options } = this.deps;
    const target = resolveWorkerTarget(store, endpoint, this.buildIdOf(endpoint));
    const dir = await this.unpacker.ensure(target.build.id, target.artifactPath);
    const python = options.pythonForImage
      ? options.pythonForImage(target.image, endpoint.name)
      : await defaultPythonForImage(target.image, () => this.gpus.present());
    const gone = () => w.stopping || w.exited || this.closed;
    const gpu = await this.gpus.assign({ id: w.id, gone }, endpoint, target.env, (line) => {
      this.log(line);
      this.platformLog(endpoint.id, w.id, line);
    });
    const user = await this.uids?.userFor(target.build.appId);
    const volumeDir = volumeFolderOf(store, options.dataDir, endpoint);
    if (volumeDir && user) await giveVolumeTo(volumeDir, user);
    const lb = w.type === "LB" && !shell; // a shell listens for nothing
    const network = {
      platformSocket: this.deps.channelSocket?.(),
      workerId: w.id,
      apiBase: this.deps.apiBase(),
      lb,
      tunnelPorts: loopbackPorts(target.build.manifest.urls, this.deps.apiBase()),
      egress: target.network,
    };
    const limits = this.resources.limitsOf(endpoint, gpu ? this.gpus.machineCount() : 0);
    const request = {
      image: target.image,
      python,
      buildDir: dir,
      handler: target.handler,
      env: await workerEnv(this.deps, endpoint, w, token, target),
      gpu,
      volumeDir,
      network,
      tmpBytes: limits.tmpBytes,
      user,
    };
    const warm = shell ? undefined : await this.spares.claim(endpoint, target, request, limits);
    const workerLaunch = warm?.launch ?? (await this.images.launch(shell ? { ...request, command: shell.command } : request));
    const launch = shell ? shell.adjust(workerLaunch) : workerLaunch;
    if (gone()) {
      if (warm) warm.discard();
      else if (launch.channel) await closeChannel(launch.channel); // its exit may have come and gone meanwhile
      throw new Error("stopped before it started");
    }
    w.channel = launch.channel;
    if (lb) w.lbSocket = launch.channel?.lbSocket;
    w.spawnedAt = Date.now(); // the cold start counts making the cgroup
    w.limits = this.resources.view(limits, (this.sandboxed = launch.sandboxed));
    const cgroup = (w.cgroup = warm ? warm.cgroup : this.resources.open(w.id, limits));
    // In the sandbox a shell (sh) joins the cgroup and execs bwrap; without it, the interpreter joins before it can fork.
    const proc = warm?.proc ?? spawnLaunch(launch, { stdin: shell !== undefined, prefix: cgroup && launch.sandboxed ? joinPrefix(cgroup) : undefined });
    w.proc = proc;
    if (warm) w.pid = warm.pid;
    else if (launch.sandboxed) readChildPid(proc, w);
    else {
      w.pid = proc.pid;
      if (cgroup && proc.pid) cgroup.join(proc.pid);
    }
    return { proc, launch, target };
  }

  private async spawnWorker(endpoint: EndpointRecord, w: WorkerInfo, token: string): Promise<void> {
    if (this.deps.remote?.places(endpoint)) return this.spawnRemote(this.deps.remote, endpoint, w, token);
    const { store } = this.deps;
    try {
      const { proc, launch, target } = await this.spawnProcess(endpoint, w, token);
      store.workers.started(w.id, endpoint.id, target.build.id, proc.pid ?? null);
      // its output to its logs, within its log rate, the last few lines kept (./worker-logs.ts)
      captureWorkerOutput(proc, w, this.deps.options.logRate, {
        line: (text) => store.logs.append(endpoint.id, w.id, text),
        note: (text) => this.platformLog(endpoint.id, w.id, text),
      });
      if (w.type === "LB") this.lb.watchStarts();
      proc.on("error", (error) => {
        this.platformLog(endpoint.id, w.id, `worker ${w.id} could not start ${launch.command}: ${error.message}`);
        if (proc.pid === undefined) {
          // spawn failed (no such program): no exit event follows
          this.startFailed(w, error.message);
          this.onExit(w);
        }
      });
      proc.on("exit", (code, signal) => this.exited(w, signal ? `signal ${signal}` : `code ${code}`));
    } catch (error) {
      this.notStarted(w, error as Error);
    }
  }

  /** A worker on another node (./backends/backend.ts): its backend places it and reports its exit. */
  private async spawnRemote(remote: RemoteWorkers, endpoint: EndpointRecord, w: WorkerInfo, token: string): Promise<void> {
    const log = (line: string) => this.platformLog(endpoint.id, w.id, line);
    try {
      const launch = await remoteLaunch(
        { ...this.deps, nodeApiBase: () => remote.nodeApiBase(), volumesRoot: remote.volumesRoot, uids: this.uids },
        endpoint,
        w,
        token,
        this.buildIdOf(endpoint),
        log,
      );
      if (w.stopping || this.closed) throw new Error("stopped before it started");
      w.spawnedAt = Date.now();
      this.deps.store.workers.started(w.id, endpoint.id, launch.buildId, null);
      const ticket = newSecret("wkl_");
      w.ticketDigest = secretDigest(sha256Hex(ticket));
      w.remote = await remote.start(endpoint, w, launch, { log, exited: (how) => this.exited(w, how) }, ticket);
      if (w.stopping || this.closed) w.remote.signal("SIGKILL"); // stopped while it was being submitted
    } catch (error) {
      this.notStarted(w, error as Error);
    }
  }

  private exited(w: WorkerInfo, how: string): void {
    this.platformLog(w.endpointId, w.id, `worker ${w.id} exited (${how})`);
    if (w.limits && (w.cgroup?.oomKills() ?? 0) > 0) {
      w.outOfMemory = true;
      this.deps.telemetry?.workerOomKilled(w.endpointId);
      this.platformLog(w.endpointId, w.id, `worker ${w.id} was killed for memory: ${this.resources.outOfMemory(w.limits).message.split("\n")[0]}`);
    }
    if (!w.stopping && !w.ready) this.startFailed(w, `exited (${how}) before it was ready`);
    this.onExit(w);
  }

  private notStarted(w: WorkerInfo, error: Error): void {
    this.platformLog(w.endpointId, w.id, `worker ${w.id} did not start: ${error.message}`);
    if (!w.stopping && !this.closed) this.startFailed(w, `did not start: ${error.message}`);
    this.onExit(w);
  }

  /** A worker exited (or could not start) before it was ready: its endpoint backs off (./restart-policy.ts). */
  private startFailed(w: WorkerInfo, why: string): void {
    const { error, delay, failJobs } = this.restarts.startFailed(w, why);
    this.platformLog(w.endpointId, w.id, `worker ${w.id} ${why}; next start in ${delay / 1000} s`);
    if (failJobs) {
      const failed = this.deps.queue.failQueued(w.endpointId, JSON.stringify(error), error.error_type);
      if (failed > 0) this.platformLog(w.endpointId, w.id, `${failed} queued job(s) failed: the endpoint's workers exit before they are ready`);
    }
  }

  private platformLog(endpointId: string, workerId: string, line: string): void {
    this.deps.store.logs.append(endpointId, workerId, `[platform] ${line}`);
  }

  private onExit(w: WorkerInfo): void {
    if (w.exited) return;
    w.exited = true;
    this.workers.delete(w.id);
    this.deps.store.workers.stopped(w.id);
    this.gpus.release(w.id);
    this.deps.queue.releaseTakers(w.id);
    // At shutdown, running jobs stay IN_PROGRESS in the database: the next start requeues them.
    const held = this.closed || this.draining ? [] : [...this.deps.queue.jobsOf(w.id)];
    if (w.outOfMemory && w.limits)
      this.failHeld(w, held, this.resources.outOfMemory(w.limits)); // the same job would only end the next worker too
    else if (held.length > 0) this.deps.queue.handBack(w.id, held);
    if (w.cgroup) void this.resources.end(w.cgroup);
    wakeSignals(w);
    forgetLbTarget(w);
    if (w.channel) {
      const closing = closeChannel(w.channel).finally(() => this.channelsClosing.delete(closing));
      this.channelsClosing.add(closing);
    }
    w.resolveExit();
  }

  private failHeld(w: WorkerInfo, jobIds: string[], error: SvcError): void {
    const text = JSON.stringify({ error_type: error.code, error_message: error.message.split("\n")[0], remedy: error.remedy });
    for (const jobId of jobIds) this.deps.queue.fail(w.id, jobId, text, error.code);
  }

  /**
   * A job of this worker ran past its execution timeout: the function runs on (nothing interrupts
   * a thread), so the worker and every process it started end now; its other jobs go back to the
   * queue and a fresh worker takes them (docs/platform.md, "Resources").
   */
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
    this.spares.drop(endpointId);
    await Promise.all(this.forEndpoint(endpointId).map((w) => this.stop(w, "endpoint deleted")));
  }

  /**
   * The first step of a graceful platform stop, while the API still serves the workers: no worker
   * starts and none takes a new job; each finishes its running jobs and reports them (committed)
   * within the stop grace periods (`stop`), then exits. Jobs a worker still holds when it is killed
   * stay IN_PROGRESS and are requeued at the next start (docs/platform.md, "Stopping").
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
    await this.spares.close();
    await Promise.all(this.channelsClosing); // their namespaces and slirp4netns go with the platform
    await this.images.close();
    await Promise.all(all.map((w) => w.cgroup && this.resources.end(w.cgroup)));
    this.resources.close();
    await this.deps.remote?.close();
  }
}
