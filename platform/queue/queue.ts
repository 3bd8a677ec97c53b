/**
 * The job queue: jobs waiting or running live in memory (per-endpoint FIFOs, long-poll takers,
 * waiters); every state change is written to SQLite before it is acknowledged, so a restart
 * resumes from the database. Finished jobs leave memory at once and are read back from SQLite.
 */
import type { JobsRepo } from "../store/jobs.ts";
import type { RetryPolicy } from "../../core/endpoint-schema.ts";
import type { JobStatus } from "../store/index.ts";
import { Deque } from "./_deque.ts";
import { viewOfRow, type JobView } from "./views.ts";
import { activeJobOfRow, newActiveJob, viewOfActive, type ActiveJob, type EnqueueInput } from "./job-records.ts";
import { KeyedWaiters, type OnClientGone } from "../_keyed-waiters.ts";
import { JobStreams, type StreamRead } from "./job-streams.ts";
import type { Telemetry } from "../telemetry/telemetry.ts";

export type { ActiveJob, EnqueueInput } from "./job-records.ts";
export type { OnClientGone } from "../_keyed-waiters.ts";
export type { StreamRead } from "./job-streams.ts";

export interface QueueHooks {
  /** A job entered an endpoint's queue (the autoscaler may start a worker). */
  onQueued?(job: ActiveJob): void;
  /** A job left a worker (finished, cancelled, timed out or handed back). */
  onReleased?(workerId: string, jobId: string): void;
  /** A running job was cancelled or its ttl ran out: tell its worker. */
  onCancelRunning?(workerId: string, jobId: string): void;
  /** A running job ran past its execution timeout and the platform's grace: its worker is ended. */
  onTimedOut?(workerId: string, jobId: string): void;
  /** A job reached a final status (or expired); `webhook` is the job's webhook URL. */
  onFinal?(view: JobView, webhook: string | null): void;
  /** The endpoint's declared retries (`retries=` in its build's manifest), if any. */
  retryPolicy?(endpointId: string): RetryPolicy | undefined;
}

/** Failures a declared retry would repeat (docs/platform.md, "Retries"): the input, or a result the platform cannot take. */
const NEVER_RETRIED = new Set(["InputValidationError", "JOB_OUTPUT_INVALID", "OutputRefusedError", "OutputNotJSONError"]);

export interface QueueSettings {
  runsyncRetentionMs: number;
  runRetentionMs: number;
}

interface Taker {
  workerId: string;
  done(job: ActiveJob | null): void;
}

interface EndpointQueue {
  pending: Deque<ActiveJob>;
  takers: Taker[];
  /** Jobs IN_QUEUE (pending may also hold stale entries, skipped on shift). */
  queued: number;
  queuedNormal: number;
}

const EMPTY: ReadonlySet<string> = new Set();
/** How long after its executionTimeout the platform itself times a running job out. */
export const TIMEOUT_GRACE_MS = 2000;
/** Expired jobs deleted in one transaction (~1 ms): the platform answers requests between chunks. */
export const PRUNE_CHUNK = 250;

/**
 * ~440 lines, over the ~250 a class gets, for a reason: this is the hot path's state machine (take,
 * assign, finalize, hand back, expire) over four maps that every transition keeps consistent in
 * one synchronous step, with no allocation per job beyond the job itself (docs/platform.md, "Hot
 * path"). What does not change those maps lives apart: job records (./job-records.ts), final-status
 * waiters (../_keyed-waiters.ts), streamed output (./job-streams.ts).
 */
export class JobQueue {
  private readonly active = new Map<string, ActiveJob>();
  private readonly running = new Map<string, ActiveJob>();
  private readonly endpoints = new Map<string, EndpointQueue>();
  /** Callers waiting for a job's final status: its view, or null when their wait runs out. */
  private readonly waiters = new KeyedWaiters<JobView | null>();
  /** Streamed output (./job-streams.ts). */
  private readonly streams: JobStreams;
  private readonly byWorker = new Map<string, Set<string>>();
  /** Jobs waiting out a declared retry's delay: IN_QUEUE and counted, not yet in `pending`. */
  private readonly delayed = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly jobs: JobsRepo,
    private readonly settings: QueueSettings,
    public hooks: QueueHooks = {},
    /** Metrics and traces (../telemetry/telemetry.ts): one call per transition. */
    private readonly telemetry?: Telemetry,
  ) {
    this.streams = new JobStreams(jobs, this.active);
  }

  /** Loads jobs that were waiting or running when the platform last stopped; running ones are requeued as a retry. */
  recover(now = Date.now()): { requeued: number; expired: number } {
    let requeued = 0;
    let expired = 0;
    for (const row of this.jobs.active()) {
      if (row.created_at + row.ttl_ms <= now) {
        this.jobs.remove(row.id);
        expired++;
        continue;
      }
      if (row.status === "IN_PROGRESS") {
        this.jobs.requeue(row.id, row.handbacks);
        requeued++;
      }
      const job = activeJobOfRow(row);
      this.active.set(job.id, job);
      this.addPending(job, false);
    }
    return { requeued, expired };
  }

  /** Queues a job; `traceparent` is the caller's W3C trace context, if any (docs/observability.md). */
  enqueue(input: EnqueueInput, traceparent?: string): ActiveJob {
    const job = newActiveJob(input);
    this.jobs.insert(job, job.kind === "runsync"); // held: written with its final write (docs/platform.md, "Hot path")
    this.telemetry?.jobAccepted(job, traceparent);
    this.active.set(job.id, job);
    this.addPending(job, false);
    return job;
  }

  /** Hands a job to a worker: at once if one waits, else after up to `waitMs` (long poll), else null. */
  take(workerId: string, endpointId: string, waitMs: number, onGone?: OnClientGone): ActiveJob | null | Promise<ActiveJob | null> {
    const eq = this.endpointQueue(endpointId);
    const job = this.nextPending(eq);
    if (job) {
      this.assign(job, workerId);
      return job;
    }
    if (waitMs <= 0) return null;
    return new Promise((resolve) => {
      let settled = false;
      let stopListening: (() => void) | undefined;
      const finish = (value: ActiveJob | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        stopListening?.();
        resolve(value);
      };
      const taker: Taker = { workerId, done: finish };
      const drop = () => {
        const at = eq.takers.indexOf(taker);
        if (at >= 0) eq.takers.splice(at, 1);
      };
      const timer = setTimeout(() => {
        drop();
        finish(null);
      }, waitMs);
      eq.takers.push(taker);
      // The client gone (a closed connection) ends the poll: no job goes to it. May call back at once.
      stopListening = onGone?.(() => {
        drop();
        finish(null);
      });
      if (settled) stopListening?.();
    });
  }

  /** Hands the endpoint's next queued job to a worker, or null when none waits (no long poll). */
  takeNow(workerId: string, endpointId: string): ActiveJob | null {
    const job = this.nextPending(this.endpointQueue(endpointId));
    if (!job) return null;
    this.assign(job, workerId);
    return job;
  }

  /** Ends the long polls of a worker (it is stopping) with no job. */
  releaseTakers(workerId: string): void {
    for (const eq of this.endpoints.values()) {
      const mine = eq.takers.filter((t) => t.workerId === workerId);
      if (mine.length === 0) continue;
      eq.takers = eq.takers.filter((t) => t.workerId !== workerId);
      for (const t of mine) t.done(null);
    }
  }

  /** Ids of the jobs a worker runs. */
  jobsOf(workerId: string): ReadonlySet<string> {
    return this.byWorker.get(workerId) ?? EMPTY;
  }

  /** The running job `jobId` if `workerId` holds it. */
  heldBy(workerId: string, jobId: string): ActiveJob | undefined {
    const job = this.running.get(jobId);
    return job && job.workerId === workerId ? job : undefined;
  }

  complete(workerId: string, jobId: string, output: string | null): boolean {
    const job = this.heldBy(workerId, jobId);
    if (!job) return false;
    this.finalize(job, "COMPLETED", output, null, null);
    return true;
  }

  fail(workerId: string, jobId: string, error: string, errorType: string | null, status: "FAILED" | "TIMED_OUT" = "FAILED"): boolean {
    const job = this.heldBy(workerId, jobId);
    if (!job) return false;
    const delayMs = status === "FAILED" ? this.retryDelayMs(job, errorType) : undefined;
    if (delayMs === undefined) this.finalize(job, status, null, error, errorType);
    else this.retryLater(job, delayMs);
    return true;
  }

  progress(workerId: string, jobId: string, output: string | null): boolean {
    const job = this.heldBy(workerId, jobId);
    if (!job) return false;
    job.progress = output;
    return true;
  }

  addChunk(workerId: string, jobId: string, chunk: string): boolean {
    const job = this.heldBy(workerId, jobId);
    if (!job) return false;
    this.streams.add(job, chunk);
    return true;
  }

  /** Chunks not yet read by a /stream caller, waiting up to `waitMs` for one while the job runs. */
  readStream(jobId: string, endpointId: string, waitMs: number): Promise<StreamRead> {
    return this.streams.read(jobId, endpointId, waitMs);
  }

  /** The job as /status shows it, or undefined when unknown, expired or of another endpoint. */
  view(jobId: string, endpointId?: string): JobView | undefined {
    const job = this.active.get(jobId);
    if (job) return endpointId === undefined || job.endpointId === endpointId ? viewOfActive(job) : undefined;
    const row = this.jobs.get(jobId);
    if (!row || (endpointId !== undefined && row.endpoint_id !== endpointId)) return undefined;
    return viewOfRow(row);
  }

  /**
   * Waits until the job is final, `waitMs` runs out or the client goes away (`onGone`); answers
   * the view then (undefined: gone).
   */
  async waitFinal(jobId: string, endpointId: string, waitMs: number, onGone?: OnClientGone): Promise<JobView | undefined> {
    const job = this.active.get(jobId);
    if (!job) return this.view(jobId, endpointId);
    if (job.endpointId !== endpointId) return undefined;
    const final = await this.waiters.wait(jobId, waitMs, null, onGone);
    return final ?? this.view(jobId, endpointId);
  }

  cancel(jobId: string, endpointId: string): JobView | undefined {
    const job = this.active.get(jobId);
    if (!job) return this.view(jobId, endpointId);
    if (job.endpointId !== endpointId) return undefined;
    const workerId = job.workerId;
    const view = this.finalize(job, "CANCELLED", null, null, null);
    if (workerId) this.hooks.onCancelRunning?.(workerId, jobId);
    return view;
  }

  /** Requeues a FAILED or TIMED_OUT job under the same id; answers the job's status either way. */
  retry(jobId: string, endpointId: string): { status: JobStatus; retried: boolean } | undefined {
    if (this.active.has(jobId)) {
      const job = this.active.get(jobId)!;
      return job.endpointId === endpointId ? { status: job.status, retried: false } : undefined;
    }
    const row = this.jobs.get(jobId);
    if (!row || row.endpoint_id !== endpointId) return undefined;
    if (row.status !== "FAILED" && row.status !== "TIMED_OUT") return { status: row.status, retried: false };
    const now = Date.now();
    this.jobs.retry(jobId, now);
    const job = activeJobOfRow({ ...row, created_at: now, status: "IN_QUEUE", handbacks: 0, stream_cursor: 0, retries: row.retries + 1 });
    this.telemetry?.jobAccepted(job, undefined);
    this.active.set(job.id, job);
    this.addPending(job, false);
    return { status: "IN_QUEUE", retried: true };
  }

  /** Removes the endpoint's queued jobs (running ones go on); answers how many. */
  purge(endpointId: string): number {
    return this.endQueued(endpointId, (job) => {
      this.forget(job);
      this.jobs.remove(job.id);
      this.telemetry?.jobFinished(job, "CANCELLED", Date.now(), null);
      this.notify(job.id, { ...viewOfActive(job), status: "CANCELLED", finishedAt: Date.now() });
    });
  }

  /** Fails the endpoint's queued jobs with one error (its workers cannot run them: docs/platform.md). */
  failQueued(endpointId: string, error: string, errorType: string): number {
    return this.endQueued(endpointId, (job) => this.finalize(job, "FAILED", null, error, errorType));
  }

  /** A worker died or went silent: its jobs go back to the queue once, then fail with "worker died". */
  handBack(workerId: string, jobIds: Iterable<string>): void {
    for (const jobId of jobIds) {
      const job = this.heldBy(workerId, jobId);
      if (!job) continue;
      if (job.handbacks >= 1) {
        this.finalize(job, "FAILED", null, "worker died", "WorkerDied");
        continue;
      }
      job.handbacks++;
      this.requeueRunning(job, "handed back: its worker died");
      this.addPending(job, true);
    }
  }

  /** The wait before a failed job's declared retry, or undefined when it fails now (none declared, none left, or a failure a retry would repeat). */
  private retryDelayMs(job: ActiveJob, errorType: string | null): number | undefined {
    if (errorType !== null && NEVER_RETRIED.has(errorType)) return undefined;
    const policy = this.hooks.retryPolicy?.(job.endpointId);
    if (!policy || job.retries >= policy.maxRetries) return undefined;
    return policy.initialDelayMs * policy.backoff ** job.retries;
  }

  /** A running job back to IN_QUEUE (stored), released by its worker; the caller places it. */
  private requeueRunning(job: ActiveJob, why: string): void {
    const workerId = job.workerId!;
    this.telemetry?.jobRequeued(job, why);
    this.running.delete(job.id);
    this.unbind(workerId, job.id);
    job.retries++;
    job.status = "IN_QUEUE";
    job.startedAt = null;
    job.workerId = null;
    job.progress = null;
    job.streamSeq = 0;
    job.streamCursor = 0;
    this.jobs.requeue(job.id, job.handbacks);
    this.hooks.onReleased?.(workerId, job.id);
  }

  /** A declared retry: the job waits `delayMs` IN_QUEUE (counted as queued), then joins the queue's end. */
  private retryLater(job: ActiveJob, delayMs: number): void {
    this.requeueRunning(job, `failed: retried in ${delayMs} ms`);
    const eq = this.endpointQueue(job.endpointId);
    eq.queued++;
    if (!job.lowPriority) eq.queuedNormal++;
    const timer = setTimeout(() => {
      this.delayed.delete(job.id);
      eq.queued--;
      if (!job.lowPriority) eq.queuedNormal--;
      this.addPending(job, false);
    }, delayMs);
    timer.unref();
    this.delayed.set(job.id, timer);
  }

  /** Execution timeouts and ttl expiry; answers how many jobs it ended. */
  sweep(now = Date.now()): number {
    let ended = 0;
    for (const job of this.running.values()) {
      // The worker enforces the timeout itself (and reports it); this later deadline catches hung workers.
      if (job.startedAt !== null && now - job.startedAt > job.executionTimeoutMs + TIMEOUT_GRACE_MS) {
        const workerId = job.workerId;
        this.finalize(job, "TIMED_OUT", null, `execution timeout: the job ran longer than ${job.executionTimeoutMs} ms`, "ExecutionTimeout");
        if (workerId) this.hooks.onTimedOut?.(workerId, job.id);
        ended++;
      }
    }
    for (const job of this.active.values()) {
      if (job.createdAt + job.ttlMs > now) continue;
      // ttl covers queue time plus run time: the job is gone (/status answers 404).
      const workerId = job.workerId;
      this.forget(job);
      this.jobs.remove(job.id);
      const view: JobView = { ...viewOfActive(job), status: "TIMED_OUT", finishedAt: now, output: null, error: "job expired (ttl)", errorType: "TtlExpired" };
      this.telemetry?.jobFinished(job, "TIMED_OUT", now, "TtlExpired");
      if (workerId) {
        this.hooks.onReleased?.(workerId, job.id);
        this.hooks.onCancelRunning?.(workerId, job.id);
      }
      this.notify(job.id, view);
      this.hooks.onFinal?.(view, job.webhook);
      ended++;
    }
    return ended;
  }

  /**
   * Deletes finished jobs whose retention ran out, at most `limit` (all when not given); returns
   * how many. The platform deletes PRUNE_CHUNK at a time between requests (server.ts).
   */
  prune(now = Date.now(), limit = Infinity): number {
    let total = 0;
    while (total < limit) {
      const chunk = Math.min(PRUNE_CHUNK, limit - total);
      const n = this.jobs.prune(now, chunk);
      total += n;
      if (n < chunk) break;
    }
    return total;
  }

  /** Drops everything of a deleted endpoint. */
  removeEndpoint(endpointId: string): void {
    for (const job of [...this.active.values()]) {
      if (job.endpointId !== endpointId) continue;
      this.forget(job);
      this.notify(job.id, { ...viewOfActive(job), status: "CANCELLED", finishedAt: Date.now() });
    }
    const eq = this.endpoints.get(endpointId);
    if (eq) for (const t of eq.takers.splice(0)) t.done(null);
    this.endpoints.delete(endpointId);
    this.jobs.removeEndpoint(endpointId);
  }

  /**
   * The autoscaler's view of an endpoint: `oldestNormalWaitMs` is how long its oldest queued job
   * (not lowPriority) has waited, `running` how many of its jobs workers hold.
   */
  stats(endpointId: string, now = Date.now()): { queued: number; queuedNormal: number; oldestNormalWaitMs: number; running: number } {
    const eq = this.endpoints.get(endpointId);
    let running = 0;
    for (const job of this.running.values()) if (job.endpointId === endpointId) running++;
    if (!eq) return { queued: 0, queuedNormal: 0, oldestNormalWaitMs: 0, running };
    let oldest = 0;
    if (eq.queuedNormal > 0) {
      for (const job of eq.pending) {
        if (job.status === "IN_QUEUE" && !job.lowPriority && this.active.get(job.id) === job) {
          oldest = now - job.createdAt;
          break;
        }
      }
    }
    return { queued: eq.queued, queuedNormal: eq.queuedNormal, oldestNormalWaitMs: oldest, running };
  }

  /** Number of long-poll takers waiting on an endpoint. */
  waitingTakers(endpointId: string): number {
    return this.endpoints.get(endpointId)?.takers.length ?? 0;
  }

  /** Ends every pending wait (shutdown). */
  close(): void {
    for (const timer of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    for (const eq of this.endpoints.values()) for (const t of eq.takers.splice(0)) t.done(null);
    this.waiters.close((jobId) => this.view(jobId));
    this.streams.close();
  }

  // ---------------------------------------------------------------------------------------------

  private endpointQueue(endpointId: string): EndpointQueue {
    let eq = this.endpoints.get(endpointId);
    if (!eq) this.endpoints.set(endpointId, (eq = { pending: new Deque(), takers: [], queued: 0, queuedNormal: 0 }));
    return eq;
  }

  private addPending(job: ActiveJob, front: boolean): void {
    const eq = this.endpointQueue(job.endpointId);
    const taker = eq.takers.shift();
    if (taker) {
      this.assign(job, taker.workerId);
      taker.done(job);
      return;
    }
    if (front) eq.pending.unshift(job);
    else eq.pending.push(job);
    eq.queued++;
    if (!job.lowPriority) eq.queuedNormal++;
    this.hooks.onQueued?.(job);
  }

  private nextPending(eq: EndpointQueue): ActiveJob | undefined {
    for (let job = eq.pending.shift(); job; job = eq.pending.shift()) {
      if (job.status !== "IN_QUEUE" || this.active.get(job.id) !== job) continue; // cancelled, expired, purged
      eq.queued--;
      if (!job.lowPriority) eq.queuedNormal--;
      return job;
    }
    return undefined;
  }

  private assign(job: ActiveJob, workerId: string): void {
    job.status = "IN_PROGRESS";
    job.startedAt = Date.now();
    job.workerId = workerId;
    this.running.set(job.id, job);
    let held = this.byWorker.get(workerId);
    if (!held) this.byWorker.set(workerId, (held = new Set()));
    held.add(job.id);
    this.jobs.start(job.id, job.startedAt, workerId);
    this.telemetry?.jobStarted(job);
  }

  /** Takes a job out of memory (queue counters, running set); does not touch the database. */
  /** Empties the endpoint's queue, ending each job still queued there with `end` (purge, failQueued); answers how many. */
  private endQueued(endpointId: string, end: (job: ActiveJob) => void): number {
    const eq = this.endpoints.get(endpointId);
    if (!eq) return 0;
    let ended = 0;
    const waiting = [...this.delayed.keys()].map((id) => this.active.get(id)!).filter((job) => job.endpointId === endpointId);
    for (const job of [...eq.pending, ...waiting]) {
      if (job.status !== "IN_QUEUE" || this.active.get(job.id) !== job) continue;
      end(job);
      ended++;
    }
    eq.pending.clear();
    eq.queued = 0;
    eq.queuedNormal = 0;
    return ended;
  }

  private forget(job: ActiveJob): void {
    this.active.delete(job.id);
    const retryTimer = this.delayed.get(job.id);
    if (retryTimer) {
      clearTimeout(retryTimer);
      this.delayed.delete(job.id);
    }
    if (job.status === "IN_QUEUE") {
      const eq = this.endpoints.get(job.endpointId);
      if (eq) {
        eq.queued--;
        if (!job.lowPriority) eq.queuedNormal--;
      }
    } else {
      this.running.delete(job.id);
      if (job.workerId) this.unbind(job.workerId, job.id);
    }
    this.streams.wake(job.id);
  }

  private unbind(workerId: string, jobId: string): void {
    const held = this.byWorker.get(workerId);
    if (!held) return;
    held.delete(jobId);
    if (held.size === 0) this.byWorker.delete(workerId);
  }

  private finalize(job: ActiveJob, status: JobStatus, output: string | null, error: string | null, errorType: string | null): JobView {
    const now = Date.now();
    const workerId = job.workerId;
    this.forget(job);
    const retention = job.kind === "runsync" ? this.settings.runsyncRetentionMs : this.settings.runRetentionMs;
    this.jobs.finish(job.id, { status, output, error, errorType, finishedAt: now, startedAt: job.startedAt, workerId, pruneAt: now + retention });
    if (job.streamCursor > 0) this.jobs.setStreamCursor(job.id, job.streamCursor);
    this.telemetry?.jobFinished(job, status, now, errorType);
    const view: JobView = {
      id: job.id,
      endpointId: job.endpointId,
      status,
      createdAt: job.createdAt,
      startedAt: job.startedAt,
      finishedAt: now,
      output,
      error,
      errorType,
      workerId,
      retries: job.retries,
    };
    if (workerId) this.hooks.onReleased?.(workerId, job.id);
    this.notify(job.id, view);
    this.hooks.onFinal?.(view, job.webhook);
    return view;
  }

  private notify(jobId: string, view: JobView): void {
    this.waiters.notify(jobId, view);
  }
}
