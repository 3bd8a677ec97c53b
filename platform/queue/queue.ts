/**
 * The job queue: jobs waiting or running live in memory (per-endpoint FIFOs, long-poll takers,
 * waiters); every state change is written to SQLite before it is acknowledged, so a restart
 * resumes from the database. Finished jobs leave memory at once and are read back from SQLite.
 */
import type { JobsRepo } from "../store/jobs.ts";
import type { RetryPolicy } from "../../core/endpoint-schema.ts";
import type { JobStatus } from "../store/index.ts";
import { viewOfRow, type JobView } from "./views.ts";
import { activeJobOfRow, clearRunState, finalViewOf, newActiveJob, viewOfActive, type ActiveJob, type EnqueueInput } from "./job-records.ts";
import { KeyedWaiters, type OnClientGone } from "../_keyed-waiters.ts";
import { JobStreams, type StreamRead } from "./job-streams.ts";
import { EndpointQueue } from "./endpoint-queue.ts";
import { RunningJobs } from "./running-jobs.ts";
import { DelayedRetries, retryDelayMs } from "./declared-retries.ts";
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

export interface QueueSettings {
  runsyncRetentionMs: number;
  runRetentionMs: number;
}

/** How long after its executionTimeout the platform itself times a running job out. */
export const TIMEOUT_GRACE_MS = 2000;
/** Expired jobs deleted in one transaction (~1 ms): the platform answers requests between chunks. */
export const PRUNE_CHUNK = 250;

/**
 * The hot path's state machine (take, assign, finalize, hand back, expire): each transition keeps
 * the job's place in memory and its stored row consistent in one synchronous step, with no
 * allocation per job beyond the job itself (docs/platform.md, "Hot path"). Where a job sits lives
 * apart: each endpoint's FIFO and long polls (./endpoint-queue.ts), the jobs workers hold
 * (./running-jobs.ts), those waiting out a declared retry (./declared-retries.ts); so do job records
 * (./job-records.ts), final-status waiters (../_keyed-waiters.ts) and streamed output (./job-streams.ts).
 */
export class JobQueue {
  /** Every job waiting or running, by id. */
  private readonly active = new Map<string, ActiveJob>();
  private readonly running = new RunningJobs();
  private readonly endpoints = new Map<string, EndpointQueue>();
  /** Callers waiting for a job's final status: its view, or null when their wait runs out. */
  private readonly waiters = new KeyedWaiters<JobView | null>();
  private readonly streams: JobStreams;
  private readonly delayed = new DelayedRetries();

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
    const job = eq.shift();
    if (job) {
      this.assign(job, workerId);
      return job;
    }
    if (waitMs <= 0) return null;
    return eq.poll(workerId, waitMs, onGone);
  }

  /** Hands the endpoint's next queued job to a worker, or null when none waits (no long poll). */
  takeNow(workerId: string, endpointId: string): ActiveJob | null {
    const job = this.endpointQueue(endpointId).shift();
    if (!job) return null;
    this.assign(job, workerId);
    return job;
  }

  /** Ends the long polls of a worker (it is stopping) with no job. */
  releaseTakers(workerId: string): void {
    for (const eq of this.endpoints.values()) eq.releaseTakers(workerId);
  }

  /** Ids of the jobs a worker runs. */
  jobsOf(workerId: string): ReadonlySet<string> {
    return this.running.jobsOf(workerId);
  }

  /** The running job `jobId` if `workerId` holds it. */
  heldBy(workerId: string, jobId: string): ActiveJob | undefined {
    return this.running.heldBy(workerId, jobId);
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
    const delayMs = status === "FAILED" ? retryDelayMs(job, errorType, this.hooks) : undefined;
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
      this.waiters.notify(job.id, { ...viewOfActive(job), status: "CANCELLED", finishedAt: Date.now() });
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

  /** A running job back to IN_QUEUE (stored), released by its worker; the caller places it. */
  private requeueRunning(job: ActiveJob, why: string): void {
    const workerId = job.workerId!;
    this.telemetry?.jobRequeued(job, why);
    this.running.remove(job.id, workerId);
    clearRunState(job);
    this.jobs.requeue(job.id, job.handbacks);
    this.hooks.onReleased?.(workerId, job.id);
  }

  /** A declared retry: the job waits `delayMs` IN_QUEUE (counted as queued), then joins the queue's end. */
  private retryLater(job: ActiveJob, delayMs: number): void {
    this.requeueRunning(job, `failed: retried in ${delayMs} ms`);
    const eq = this.endpointQueue(job.endpointId);
    eq.count(job, 1);
    this.delayed.schedule(job, delayMs, () => {
      eq.count(job, -1);
      this.addPending(job, false);
    });
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
      this.waiters.notify(job.id, view);
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
      this.waiters.notify(job.id, { ...viewOfActive(job), status: "CANCELLED", finishedAt: Date.now() });
    }
    this.endpoints.get(endpointId)?.endTakers();
    this.endpoints.delete(endpointId);
    this.jobs.removeEndpoint(endpointId);
  }

  /**
   * The autoscaler's view of an endpoint: `oldestNormalWaitMs` is how long its oldest queued job
   * (not lowPriority) has waited, `running` how many of its jobs workers hold.
   */
  stats(endpointId: string, now = Date.now()): { queued: number; queuedNormal: number; oldestNormalWaitMs: number; running: number } {
    const eq = this.endpoints.get(endpointId);
    const running = this.running.countOf(endpointId);
    if (!eq) return { queued: 0, queuedNormal: 0, oldestNormalWaitMs: 0, running };
    return { queued: eq.queued, queuedNormal: eq.queuedNormal, oldestNormalWaitMs: eq.oldestNormalWaitMs(now), running };
  }

  /** Number of long-poll takers waiting on an endpoint. */
  waitingTakers(endpointId: string): number {
    return this.endpoints.get(endpointId)?.takerCount ?? 0;
  }

  /** Ends every pending wait (shutdown). */
  close(): void {
    this.delayed.close();
    for (const eq of this.endpoints.values()) eq.endTakers();
    this.waiters.close((jobId) => this.view(jobId));
    this.streams.close();
  }

  // ---------------------------------------------------------------------------------------------

  private endpointQueue(endpointId: string): EndpointQueue {
    let eq = this.endpoints.get(endpointId);
    if (!eq) this.endpoints.set(endpointId, (eq = new EndpointQueue(this.active)));
    return eq;
  }

  /** A job to its endpoint: straight to the longest-waiting long poll, else into the FIFO (`front`: a hand-back). */
  private addPending(job: ActiveJob, front: boolean): void {
    const eq = this.endpointQueue(job.endpointId);
    const taker = eq.nextTaker();
    if (taker) {
      this.assign(job, taker.workerId);
      taker.done(job);
      return;
    }
    eq.push(job, front);
    this.hooks.onQueued?.(job);
  }

  private assign(job: ActiveJob, workerId: string): void {
    job.status = "IN_PROGRESS";
    job.startedAt = Date.now();
    job.workerId = workerId;
    this.running.add(job, workerId);
    this.jobs.start(job.id, job.startedAt, workerId);
    this.telemetry?.jobStarted(job);
  }

  /** Empties the endpoint's queue, ending each job still queued there with `end` (purge, failQueued); answers how many. */
  private endQueued(endpointId: string, end: (job: ActiveJob) => void): number {
    const eq = this.endpoints.get(endpointId);
    return eq ? eq.endAll(this.delayed.jobsOf(endpointId), end) : 0;
  }

  /** Takes a job out of memory (queue counters, running set, a retry's wait); does not touch the database. */
  private forget(job: ActiveJob): void {
    this.active.delete(job.id);
    this.delayed.cancel(job.id);
    if (job.status === "IN_QUEUE") this.endpoints.get(job.endpointId)?.count(job, -1);
    else this.running.remove(job.id, job.workerId);
    this.streams.wake(job.id);
  }

  private finalize(job: ActiveJob, status: JobStatus, output: string | null, error: string | null, errorType: string | null): JobView {
    const now = Date.now();
    const workerId = job.workerId;
    this.forget(job);
    const retention = job.kind === "runsync" ? this.settings.runsyncRetentionMs : this.settings.runRetentionMs;
    this.jobs.finish(job.id, { status, output, error, errorType, finishedAt: now, startedAt: job.startedAt, workerId, pruneAt: now + retention });
    if (job.streamCursor > 0) this.jobs.setStreamCursor(job.id, job.streamCursor);
    this.telemetry?.jobFinished(job, status, now, errorType);
    const view = finalViewOf(job, status, now, output, error, errorType);
    if (workerId) this.hooks.onReleased?.(workerId, job.id);
    this.waiters.notify(job.id, view);
    this.hooks.onFinal?.(view, job.webhook);
    return view;
  }
}
