/**
 * The worker supervisor: starts `python handlers/<endpoint>.py` in a build's unpacked folder,
 * inside its image environment (./image-env.ts), captures its output as worker logs, tracks its
 * state and liveness, and stops it (a `stop` signal, then SIGTERM, then SIGKILL). A worker that
 * exits or goes silent hands its jobs back; one that exits before it is ready is restarted with a
 * capped backoff; one whose module does not import reports it, and the endpoint shows why
 * (docs/platform.md, "A worker that cannot import its module").
 */
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { request } from "undici";
import { errors } from "../../core/errors.ts";
import type { Store, EndpointRecord } from "../store/index.ts";
import type { JobQueue } from "../queue/queue.ts";
import type { JobView } from "../queue/views.ts";
import type { ResolvedOptions } from "../options.ts";
import { freePort } from "../_free-port.ts";
import { newId, newSecret, sha256Hex, secretDigest, digestMatches } from "../_ids.ts";
import { BuildUnpacker } from "./unpack.ts";
import { defaultPythonForImage } from "./interpreter.ts";
import { resolveWorkerTarget, type WorkerTarget } from "./_target.ts";
import { ImageEnvironments, spawnLaunch } from "./image-env.ts";
import { captureLines } from "./worker-logs.ts";
import { WorkerGpus } from "./gpu-assign.ts";
import type { WorkerKeys } from "../worker-keys.ts";
import type { Secrets } from "../secrets.ts";
import { volumeFolderOf } from "../volumes/mount.ts";

export type WorkerState = "initializing" | "throttled" | "idle" | "running" | "unhealthy";

export interface WorkerInfo {
  id: string;
  endpointId: string;
  type: "QB" | "LB";
  tokenHash: string;
  /** `tokenHash` as bytes (decoded once: every worker request is checked against it). */
  tokenDigest: Buffer;
  /** Build, image and env this worker runs; a different key on its endpoint makes it outdated. */
  configKey: string;
  proc?: ChildProcess;
  /** The Python process (inside bwrap: its child, which is what gets signals). */
  pid?: number;
  /** The worker reported that its endpoint's module does not import (it still fails jobs). */
  failure?: WorkerError;
  /** Its last output lines: why it exited, when it exits before it is ready. */
  lastLines: string[];
  startedAt: number;
  /** When the process was spawned (after the build was unpacked). */
  spawnedAt?: number;
  /** Process start → first job-take (QB) or first GET /ping 200 (LB). */
  coldStartMs?: number;
  /** QB: took its first job request; LB: answered GET /ping. */
  ready: boolean;
  unhealthy: boolean;
  stopping: boolean;
  /** Its endpoint moved on (a new build or settings) while it was busy: no new work; stopped once idle. */
  outdated: boolean;
  exited: boolean;
  lastSeen: number;
  openPolls: number;
  idleSince: number;
  lbPort?: number;
  lbFailures: number;
  probing: boolean;
  inFlight: number;
  cancel: string[];
  stop: boolean;
  signalWaiter?: () => void;
  exit: Promise<void>;
  resolveExit: () => void;
}

/** What a worker reported (runtime: `ImportFailure.error()`), or what the platform saw of its exit. */
export interface WorkerError {
  error_type: string;
  error_message: string;
  error_traceback?: string;
  file?: string | null;
  line?: number | null;
  remedy?: string;
}

/** Why an endpoint's workers cannot serve, for its /health: the error, which worker, since when. */
export interface EndpointProblem extends WorkerError {
  /** The worker that showed it; none when no worker can start (unrunnable). */
  workerId?: string;
  since: string;
}

/** Restart backoff of workers that exit before they are ready: 1 s, doubling, at most 30 s. */
export const RESTART_BACKOFF_MS = { first: 1000, max: 30_000 } as const;
/** Early exits in a row after which the endpoint's queued jobs fail (the first may be a fluke). */
const EXITS_BEFORE_FAILING_JOBS = 2;
const LAST_LINES_KEPT = 8;

/** Platform variables a user's env may not override. */
const PASS_THROUGH_ENV = [
  "PATH", "HOME", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TEMP", "TMP", "LD_LIBRARY_PATH",
  "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_HOME", "HF_HOME", "TORCH_HOME", "XDG_CACHE_HOME", "SSL_CERT_FILE",
];

export interface SupervisorDeps {
  store: Store;
  queue: JobQueue;
  options: ResolvedOptions;
  /** Each worker's PLATFORM_API_KEY, scoped to its app and environment (never the platform's key). */
  workerKeys: WorkerKeys;
  /** Resolves `{{ PLATFORM_SECRET_<name> }}` in the env, here and nowhere else. */
  secrets: Secrets;
  apiBase: () => string;
  /** `@name` of the abstract Unix socket the API also listens on for local workers (Linux), if any. */
  workerSocket?: () => string | undefined;
}

export class Supervisor {
  readonly workers = new Map<string, WorkerInfo>();
  private readonly unpacker: BuildUnpacker;
  private readonly images: ImageEnvironments;
  /** Which worker holds which GPU (./gpu-assign.ts). */
  readonly gpus: WorkerGpus;
  private readonly readyWaiters = new Map<string, Set<() => void>>();
  /** Endpoint id → early exits in a row of workers of one config, and when the next may start. */
  private readonly startFailures = new Map<string, { configKey: string; count: number; until: number }>();
  /** Endpoint id → why its workers of one config cannot serve. */
  private readonly problems = new Map<string, { configKey: string; problem: EndpointProblem }>();
  private closed = false;
  /** The platform is stopping gracefully: no worker starts, running ones finish their jobs (drain). */
  private draining = false;
  private lbProbe?: NodeJS.Timeout;
  private lbStartProbe?: NodeJS.Timeout;

  constructor(private readonly deps: SupervisorDeps) {
    this.unpacker = new BuildUnpacker(join(deps.options.dataDir, "builds"));
    this.images = new ImageEnvironments(deps.options.dataDir, (line) => this.log(line), deps.options.isolation);
    this.gpus = new WorkerGpus(deps.options.gpuMachine);
    const probeMs = Math.max(50, Math.min(1000, deps.options.pingIntervalS * 1000));
    this.lbProbe = setInterval(() => this.probeLb(), probeMs);
    this.lbProbe.unref();
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
    if (!w.ready) return this.gpus.waiting(w.id) ? "throttled" : "initializing"; // throttled: waits for a GPU
    return this.busy(w) ? "running" : "idle";
  }

  busy(w: WorkerInfo): boolean {
    return w.inFlight > 0 || this.deps.queue.jobsOf(w.id).size > 0;
  }

  configKey(endpoint: EndpointRecord): string {
    const build = this.buildIdOf(endpoint);
    return sha256Hex(JSON.stringify([build, endpoint.type, endpoint.imageName, endpoint.templateId, endpoint.env, endpoint.name, endpoint.networkVolumeId || null]));
  }

  /** An environment's endpoints run its active build (docs/platform.md, "Deploys switch in one step"). */
  buildIdOf(endpoint: EndpointRecord): string | null {
    if (endpoint.environmentId) return this.deps.store.apps.environment(endpoint.environmentId)?.activeBuildId ?? null;
    return endpoint.buildId;
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
    const failed = this.startFailures.get(endpoint.id);
    return !failed || failed.until <= now || failed.configKey !== this.configKey(endpoint); // a redeploy starts at once
  }

  /** Why the endpoint's current workers cannot serve (its /health `error`), if they cannot. */
  problem(endpoint: EndpointRecord): EndpointProblem | undefined {
    const unrunnable = this.unrunnable(endpoint);
    if (unrunnable) return { ...unrunnable, since: new Date(endpoint.createdAt).toISOString() };
    const p = this.problems.get(endpoint.id);
    return p && p.configKey === this.configKey(endpoint) ? p.problem : undefined;
  }

  /**
   * Why no worker can ever start for the endpoint: it names a container image and no svc build
   * (the hosted SDK's create_template + create_endpoint), or more GPUs per worker than the machine
   * has (./gpu-assign.ts). Its jobs fail at once (failUnrunnable). An endpoint with neither build
   * nor image is still being set up: its jobs wait.
   */
  unrunnable(endpoint: EndpointRecord): WorkerError | undefined {
    const gpus = this.gpus.unavailable(endpoint);
    if (gpus) return { error_type: gpus.code, error_message: gpus.message, remedy: gpus.remedy };
    if (endpoint.buildId || endpoint.environmentId) return undefined;
    const template = endpoint.templateId ? this.deps.store.templates.get(endpoint.templateId) : undefined;
    const image = endpoint.imageName ?? template?.imageName;
    if (!image) return undefined; // neither build nor image yet: its jobs wait for a build (saveEndpoint with buildId)
    const error = errors.IMAGE_NOT_RUNNABLE(endpoint.name, image);
    return { error_type: error.code, error_message: error.message, remedy: error.remedy };
  }

  /** Fails the queued jobs of an endpoint no worker can start for, saying why in its logs. */
  failUnrunnable(endpoint: EndpointRecord, why: WorkerError): void {
    const failed = this.deps.queue.failQueued(endpoint.id, JSON.stringify(why), why.error_type);
    if (failed > 0) this.platformLog(endpoint.id, "platform", `${failed} job(s) failed: ${why.error_message} ${why.remedy ?? ""}`.trim());
  }

  /** A worker says its endpoint's module does not import: it fails every job; so do the queued ones. */
  reportFailure(w: WorkerInfo, error: WorkerError): void {
    w.failure = error;
    this.setProblem(w, error);
    const where = error.file ? ` at ${error.file}:${error.line}` : "";
    this.platformLog(w.endpointId, w.id, `worker ${w.id} cannot import its endpoint's module: ${error.error_type}${where}. ${error.remedy ?? ""}`.trim());
    const failed = this.deps.queue.failQueued(w.endpointId, JSON.stringify(error), error.error_type);
    if (failed > 0) this.platformLog(w.endpointId, w.id, `${failed} queued job(s) failed with that error`);
  }

  private setProblem(w: WorkerInfo, error: WorkerError): void {
    const { error_traceback: _trace, ...shown } = error;
    this.problems.set(w.endpointId, { configKey: w.configKey, problem: { ...shown, workerId: w.id, since: new Date().toISOString() } });
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
    const failed = this.startFailures.get(w.endpointId);
    if (failed?.configKey === w.configKey) this.startFailures.delete(w.endpointId);
    if (!w.failure && this.problems.get(w.endpointId)?.configKey === w.configKey) this.problems.delete(w.endpointId); // a report follows if it is broken
    w.idleSince = Date.now();
    if (w.spawnedAt) {
      w.coldStartMs = w.idleSince - w.spawnedAt;
      this.platformLog(w.endpointId, w.id, `worker ${w.id} ready ${w.coldStartMs} ms after its process started`);
    }
    const set = this.readyWaiters.get(w.endpointId);
    if (set) for (const fn of [...set]) fn();
  }

  /** Waits until some worker of the endpoint is ready (true) or `ms` runs out (false). */
  waitReady(endpointId: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      let set = this.readyWaiters.get(endpointId);
      if (!set) this.readyWaiters.set(endpointId, (set = new Set()));
      const done = (ok: boolean) => {
        clearTimeout(timer);
        set!.delete(onReady);
        signal?.removeEventListener("abort", onAbort);
        resolve(ok);
      };
      const onReady = () => done(true);
      const onAbort = () => done(false);
      const timer = setTimeout(() => done(false), ms);
      signal?.addEventListener("abort", onAbort, { once: true });
      set.add(onReady);
    });
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
    this.wakeSignals(w);
  }

  private wakeSignals(w: WorkerInfo): void {
    const fn = w.signalWaiter;
    w.signalWaiter = undefined;
    fn?.();
  }

  /** Long poll for signals: `{cancel, stop}` when there is one, else null after `waitMs`. */
  async signals(w: WorkerInfo, waitMs: number, abort?: AbortSignal): Promise<{ cancel: string[]; stop: boolean } | null> {
    const take = () => {
      if (w.cancel.length === 0 && !w.stop) return null;
      const out = { cancel: w.cancel, stop: w.stop };
      w.cancel = [];
      return out;
    };
    const now = take();
    if (now || waitMs <= 0) return now;
    w.openPolls++;
    try {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          abort?.removeEventListener("abort", done);
          if (w.signalWaiter === done) w.signalWaiter = undefined;
          resolve();
        };
        const previous = w.signalWaiter;
        w.signalWaiter = done;
        previous?.(); // one poller per worker: an older poll answers now
        const timer = setTimeout(done, waitMs);
        abort?.addEventListener("abort", done, { once: true });
      });
    } finally {
      w.openPolls--;
    }
    return take();
  }

  /** Starts one worker for the endpoint (asynchronously); undefined when it cannot start. */
  start(endpoint: EndpointRecord): WorkerInfo | undefined {
    if (!this.canStart(endpoint)) return undefined;
    const token = newSecret("wkt_");
    let resolveExit!: () => void;
    const exit = new Promise<void>((resolve) => (resolveExit = resolve));
    const now = Date.now();
    const tokenHash = sha256Hex(token);
    const w: WorkerInfo = {
      id: newId("wk"),
      endpointId: endpoint.id,
      type: endpoint.type,
      tokenHash,
      tokenDigest: secretDigest(tokenHash),
      configKey: this.configKey(endpoint),
      startedAt: now,
      ready: false,
      unhealthy: false,
      stopping: false,
      outdated: false,
      exited: false,
      lastSeen: now,
      openPolls: 0,
      idleSince: now,
      lbFailures: 0,
      probing: false,
      lastLines: [],
      inFlight: 0,
      cancel: [],
      stop: false,
      exit,
      resolveExit,
    };
    this.workers.set(w.id, w);
    void this.spawnWorker(endpoint, w, token);
    return w;
  }

  private async spawnWorker(endpoint: EndpointRecord, w: WorkerInfo, token: string): Promise<void> {
    const { store, options } = this.deps;
    let target: WorkerTarget;
    try {
      target = resolveWorkerTarget(store, endpoint, this.buildIdOf(endpoint));
      const dir = await this.unpacker.ensure(target.build.id, target.artifactPath);
      const python = options.pythonForImage ? options.pythonForImage(target.image, endpoint.name) : await defaultPythonForImage(target.image, () => this.gpus.present());
      const gone = () => w.stopping || w.exited || this.closed;
      const gpu = await this.gpus.assign({ id: w.id, gone }, endpoint, target.env, (line) => {
        this.log(line);
        this.platformLog(endpoint.id, w.id, line);
      });
      const volumeDir = volumeFolderOf(store, options.dataDir, endpoint);
      const launch = await this.images.launch({ image: target.image, python, buildDir: dir, handler: target.handler, env: await this.workerEnv(endpoint, w, token, target), gpu, volumeDir });
      if (w.stopping || this.closed) throw new Error("stopped before it started");
      w.spawnedAt = Date.now();
      const proc = spawnLaunch(launch);
      w.proc = proc;
      if (launch.sandboxed) this.readChildPid(proc, w);
      else w.pid = proc.pid;
      store.workers.started(w.id, endpoint.id, target.build.id, proc.pid ?? null);
      this.capture(proc, endpoint.id, w);
      if (w.type === "LB") this.watchLbStarts();
      proc.on("error", (error) => {
        this.platformLog(endpoint.id, w.id, `worker ${w.id} could not start ${launch.command}: ${error.message}`);
        if (proc.pid === undefined) {
          // spawn failed (no such program): no exit event follows
          this.startFailed(w, error.message);
          this.onExit(w);
        }
      });
      proc.on("exit", (code, signal) => {
        const how = signal ? `signal ${signal}` : `code ${code}`;
        this.platformLog(endpoint.id, w.id, `worker ${w.id} exited (${how})`);
        if (!w.stopping && !w.ready) this.startFailed(w, `exited (${how}) before it was ready`);
        this.onExit(w);
      });
    } catch (error) {
      this.platformLog(endpoint.id, w.id, `worker ${w.id} did not start: ${(error as Error).message}`);
      if (!w.stopping && !this.closed) this.startFailed(w, `did not start: ${(error as Error).message}`);
      this.onExit(w);
    }
  }

  /** bwrap writes `{"child-pid": N}` on fd 3: the Python process, the one to signal. */
  private readChildPid(proc: ChildProcess, w: WorkerInfo): void {
    const info = proc.stdio[3] as NodeJS.ReadableStream | null;
    if (!info) return;
    let text = "";
    info.setEncoding("utf8");
    info.on("data", (chunk: string) => {
      text += chunk;
      const pid = /"child-pid":\s*(\d+)/.exec(text)?.[1];
      if (pid && !w.pid) w.pid = Number(pid);
    });
    info.on("error", () => undefined);
  }

  /**
   * A worker exited (or could not start) before it was ready: back off its endpoint's restarts
   * (RESTART_BACKOFF_MS), show why on /health, and fail the queued jobs once it happened twice
   * in a row. A new build or config starts at once.
   */
  private startFailed(w: WorkerInfo, why: string): void {
    const previous = this.startFailures.get(w.endpointId);
    const count = previous?.configKey === w.configKey ? previous.count + 1 : 1;
    const delay = Math.min(RESTART_BACKOFF_MS.max, RESTART_BACKOFF_MS.first * 2 ** (count - 1));
    this.startFailures.set(w.endpointId, { configKey: w.configKey, count, until: Date.now() + delay });
    const output = w.lastLines.filter((line) => line.trim()).slice(-1)[0];
    const error: WorkerError = {
      error_type: "WorkerStartError",
      error_message: `The worker ${why}${count > 1 ? ` (${count} times in a row)` : ""}${output ? `; its last output: ${output}` : ""}. See the endpoint's worker logs.`,
    };
    this.setProblem(w, error);
    this.platformLog(w.endpointId, w.id, `worker ${w.id} ${why}; next start in ${delay / 1000} s`);
    if (count >= EXITS_BEFORE_FAILING_JOBS) {
      const failed = this.deps.queue.failQueued(w.endpointId, JSON.stringify(error), error.error_type);
      if (failed > 0) this.platformLog(w.endpointId, w.id, `${failed} queued job(s) failed: the endpoint's workers exit before they are ready`);
    }
  }

  /** The worker's variables (contracts section 4); its image environment sets PYTHONPATH. */
  private async workerEnv(endpoint: EndpointRecord, w: WorkerInfo, token: string, target: WorkerTarget): Promise<NodeJS.ProcessEnv> {
    const base = this.deps.apiBase();
    const prefix = `${base}/v2/_worker/${w.id}`;
    const env: NodeJS.ProcessEnv = {};
    for (const key of PASS_THROUGH_ENV) if (process.env[key] !== undefined) env[key] = process.env[key];
    Object.assign(env, this.deps.secrets.resolve(target.env)); // secret values exist only in the worker's env
    Object.assign(env, {
      PYTHONUNBUFFERED: "1",
      SVC_WORKER_ID: w.id,
      SVC_WORKER_TOKEN: token,
      SVC_ENDPOINT_ID: endpoint.id,
      SVC_ENDPOINT_NAME: target.manifestName,
      SVC_BUILD_ID: target.build.id,
      SVC_API_BASE: base,
      SVC_JOB_TAKE_URL: `${prefix}/job-take`,
      SVC_JOB_DONE_URL: `${prefix}/job-done/$ID`,
      SVC_JOBS_DONE_URL: `${prefix}/jobs-done`, // results of several jobs in one request (docs/platform.md, "Hot path")
      SVC_JOB_STREAM_URL: `${prefix}/job-stream/$ID`,
      SVC_PING_URL: `${prefix}/ping`,
      SVC_SIGNALS_URL: `${prefix}/signals`,
      SVC_ERROR_URL: `${prefix}/error`,
      SVC_PING_INTERVAL: String(this.deps.options.pingIntervalS),
      PLATFORM_API_URL: base,
      PLATFORM_API_KEY: this.deps.workerKeys.keyFor(endpoint),
    });
    const socket = this.deps.workerSocket?.();
    if (socket) env.SVC_PLATFORM_SOCKET = socket; // the runtime sends its SVC_API_BASE requests there (cheaper than TCP)
    if (endpoint.type === "LB") {
      w.lbPort = await freePort();
      env.SVC_LB_PORT = String(w.lbPort);
    }
    return env;
  }

  /** The worker's output lines go to its logs (cut when too long: ./worker-logs.ts); the last few are kept. */
  private capture(proc: ChildProcess, endpointId: string, w: WorkerInfo): void {
    const logs = this.deps.store.logs;
    captureLines([proc.stdout, proc.stderr], (line) => {
      logs.append(endpointId, w.id, line);
      w.lastLines.push(line);
      if (w.lastLines.length > LAST_LINES_KEPT) w.lastLines.shift();
    });
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
    if (held.length > 0) this.deps.queue.handBack(w.id, held);
    this.wakeSignals(w);
    w.resolveExit();
  }

  /** Graceful stop: `stop` signal (QB) or SIGTERM (LB), then SIGTERM/SIGKILL after the grace periods. */
  stop(w: WorkerInfo, reason: string): Promise<void> {
    if (w.stopping || w.exited) return w.exit;
    w.stopping = true;
    this.gpus.cancel(w.id); // one still waiting for a GPU stops waiting
    this.platformLog(w.endpointId, w.id, `stopping worker ${w.id}: ${reason}`);
    this.deps.queue.releaseTakers(w.id);
    const { stopGraceMs, killGraceMs } = this.deps.options;
    const kill = (signal: NodeJS.Signals) => this.signal(w, signal);
    if (w.type === "QB" && w.ready) {
      w.stop = true;
      this.wakeSignals(w);
      const t1 = setTimeout(() => {
        kill("SIGTERM");
        const t2 = setTimeout(() => kill("SIGKILL"), killGraceMs);
        t2.unref();
      }, stopGraceMs);
      t1.unref();
    } else {
      kill("SIGTERM");
      const t2 = setTimeout(() => kill("SIGKILL"), killGraceMs);
      t2.unref();
    }
    return w.exit;
  }

  /** Kills at once (unhealthy, deleted endpoint at shutdown). */
  kill(w: WorkerInfo): Promise<void> {
    w.stopping = true;
    this.gpus.cancel(w.id);
    if (w.proc && w.proc.exitCode === null && !w.exited) this.signal(w, "SIGKILL");
    else if (!w.proc) this.onExit(w);
    return w.exit;
  }

  /** SIGTERM goes to the Python process (bwrap does not forward signals); SIGKILL to it and to bwrap. */
  private signal(w: WorkerInfo, signal: NodeJS.Signals): void {
    const proc = w.proc;
    if (w.exited || !proc || proc.exitCode !== null) return;
    const inner = w.pid !== undefined && w.pid !== proc.pid;
    if (inner) {
      try {
        process.kill(w.pid!, signal);
      } catch {
        /* already gone */
      }
    }
    if (!inner || signal === "SIGKILL") proc.kill(signal);
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

  /** LB workers: ready once GET /ping answers 200; 3 failed probes in a row make one unhealthy. */
  private probeLb(): void {
    for (const w of this.workers.values()) {
      if (w.type !== "LB" || !w.lbPort || !w.ready || w.exited || w.unhealthy || w.stopping || w.probing) continue;
      void this.pingLb(w).then((ok) => {
        if (ok) {
          w.lbFailures = 0;
          w.lastSeen = Date.now();
          this.markReady(w);
        } else if (w.ready && ++w.lbFailures >= 3 && !w.exited) {
          this.markUnhealthy(w, "GET /ping failed 3 times");
        }
      });
    }
  }

  /** Polls a starting LB worker's /ping quickly (cold start matters). */
  async pingLb(w: WorkerInfo): Promise<boolean> {
    w.probing = true;
    try {
      const res = await request(`http://127.0.0.1:${w.lbPort}/ping`, { method: "GET", headersTimeout: 2000, bodyTimeout: 2000 });
      await res.body.dump();
      return res.statusCode === 200;
    } catch {
      return false;
    } finally {
      w.probing = false;
    }
  }

  /** Polls starting LB workers' /ping every 25 ms while there are any: an idle platform sets no such timer. */
  private watchLbStarts(): void {
    if (this.lbStartProbe) return;
    this.lbStartProbe = setInterval(() => this.pollStartingLb(), 25);
    this.lbStartProbe.unref();
  }

  /** Fast readiness polling for LB workers that are starting; the timer stops once none is. */
  pollStartingLb(): void {
    let starting = false;
    for (const w of this.workers.values()) {
      if (w.type !== "LB" || w.ready || !w.lbPort || !w.proc || w.exited || w.stopping) continue;
      starting = true;
      if (!w.probing) void this.pingLb(w).then((ok) => ok && this.markReady(w));
    }
    if (!starting && this.lbStartProbe) {
      clearInterval(this.lbStartProbe);
      this.lbStartProbe = undefined;
    }
  }

  async stopEndpoint(endpointId: string): Promise<void> {
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
    if (this.lbProbe) clearInterval(this.lbProbe);
    if (this.lbStartProbe) clearInterval(this.lbStartProbe);
    const all = [...this.workers.values()];
    for (const w of all) {
      w.stopping = true;
      this.signal(w, "SIGTERM");
    }
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, 3000).unref());
    await Promise.race([Promise.all(all.map((w) => w.exit)), deadline]);
    for (const w of all) if (!w.exited) await this.kill(w).catch(() => undefined);
    for (const w of all) this.onExit(w);
  }
}
