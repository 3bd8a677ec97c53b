/**
 * Why an endpoint's workers cannot serve, and what that does to its jobs (docs/platform.md, "A
 * worker that cannot import its module"): a worker that exits before it is ready backs its endpoint
 * off (./restart-policy.ts) and, after a few in a row, fails its queued jobs; one that reports its
 * module does not import fails them at once; an endpoint no worker can ever start for (./unrunnable.ts)
 * fails them as they come; one killed for memory is counted. The endpoint's /health shows the
 * problem. Kept per worker config: a redeploy starts afresh.
 */
import type { EndpointRecord, Store } from "../store/index.ts";
import type { JobQueue } from "../queue/queue.ts";
import type { Telemetry } from "../telemetry/telemetry.ts";
import type { WorkerGpus } from "./gpu-assign.ts";
import type { WorkerResources } from "./worker-resources.ts";
import { RestartPolicy } from "./restart-policy.ts";
import { unrunnable } from "./unrunnable.ts";
import type { EndpointProblem, WorkerError, WorkerInfo } from "./worker-info.ts";

export interface WorkerProblemsDeps {
  store: Store;
  queue: JobQueue;
  gpus: WorkerGpus;
  resources: WorkerResources;
  telemetry?: Telemetry;
  configKey(endpoint: EndpointRecord): string;
  /** A `[platform]` line in the endpoint's worker logs. */
  log(endpointId: string, workerId: string, line: string): void;
}

export class WorkerProblems {
  private readonly restarts = new RestartPolicy();

  constructor(private readonly deps: WorkerProblemsDeps) {}

  /** Whether the endpoint's workers of its current config back off after early exits. */
  backingOff(endpoint: EndpointRecord, now: number): boolean {
    return this.restarts.backingOff(endpoint.id, now, () => this.deps.configKey(endpoint)); // a redeploy starts at once
  }

  /** A worker is ready: its config starts without delay again. */
  ready(w: WorkerInfo): void {
    this.restarts.ready(w);
  }

  /** Why the endpoint's current workers cannot serve (its /health `error`), if they cannot. */
  problem(endpoint: EndpointRecord): EndpointProblem | undefined {
    const never = this.unrunnable(endpoint);
    if (never) return { ...never, since: new Date(endpoint.createdAt).toISOString() };
    return this.restarts.problem(endpoint.id, () => this.deps.configKey(endpoint));
  }

  /** Why no worker can ever start for the endpoint: its jobs fail at once. */
  unrunnable(endpoint: EndpointRecord): WorkerError | undefined {
    return unrunnable(this.deps.store, this.deps.gpus, endpoint);
  }

  /** Fails the queued jobs of an endpoint no worker can start for, saying why in its logs. */
  failUnrunnable(endpoint: EndpointRecord, why: WorkerError): void {
    const failed = this.deps.queue.failQueued(endpoint.id, JSON.stringify(why), why.error_type);
    if (failed > 0) this.deps.log(endpoint.id, "platform", `${failed} job(s) failed: ${why.error_message} ${why.remedy ?? ""}`.trim());
  }

  /** A worker says its endpoint's module does not import: it fails every job; so do the queued ones. */
  reportFailure(w: WorkerInfo, error: WorkerError): void {
    w.failure = error;
    this.restarts.setProblem(w, error);
    const where = error.file ? ` at ${error.file}:${error.line}` : "";
    this.deps.log(w.endpointId, w.id, `worker ${w.id} cannot import its endpoint's module: ${error.error_type}${where}. ${error.remedy ?? ""}`.trim());
    const failed = this.deps.queue.failQueued(w.endpointId, JSON.stringify(error), error.error_type);
    if (failed > 0) this.deps.log(w.endpointId, w.id, `${failed} queued job(s) failed with that error`);
  }

  /** A worker exited: killed for memory (its jobs then fail: ../supervisor.ts onExit), or before it was ready. */
  exited(w: WorkerInfo, how: string, outOfMemory: boolean): void {
    this.deps.log(w.endpointId, w.id, `worker ${w.id} exited (${how})`);
    if (w.limits && outOfMemory) {
      w.outOfMemory = true;
      this.deps.telemetry?.workerOomKilled(w.endpointId);
      this.deps.log(w.endpointId, w.id, `worker ${w.id} was killed for memory: ${this.deps.resources.outOfMemory(w.limits).message.split("\n")[0]}`);
    }
    if (!w.stopping && !w.ready) this.startFailed(w, `exited (${how}) before it was ready`);
  }

  /** A worker killed for memory: the jobs it held fail (WORKER_OUT_OF_MEMORY) rather than end the next worker too. */
  failOutOfMemory(w: WorkerInfo, jobIds: string[]): void {
    if (!w.limits) return;
    const error = this.deps.resources.outOfMemory(w.limits);
    const text = JSON.stringify({ error_type: error.code, error_message: error.message.split("\n")[0], remedy: error.remedy });
    for (const jobId of jobIds) this.deps.queue.fail(w.id, jobId, text, error.code);
  }

  /** A worker could not be placed or started (unless it was stopped, or the platform closes, meanwhile). */
  notStarted(w: WorkerInfo, error: Error, closing: boolean): void {
    this.deps.log(w.endpointId, w.id, `worker ${w.id} did not start: ${error.message}`);
    if (!w.stopping && !closing) this.startFailed(w, `did not start: ${error.message}`);
  }

  /** A worker exited (or could not start) before it was ready: its endpoint backs off, and its queued jobs may fail. */
  startFailed(w: WorkerInfo, why: string): void {
    const { error, delay, failJobs } = this.restarts.startFailed(w, why);
    this.deps.log(w.endpointId, w.id, `worker ${w.id} ${why}; next start in ${delay / 1000} s`);
    if (!failJobs) return;
    const failed = this.deps.queue.failQueued(w.endpointId, JSON.stringify(error), error.error_type);
    if (failed > 0) this.deps.log(w.endpointId, w.id, `${failed} queued job(s) failed: the endpoint's workers exit before they are ready`);
  }
}
