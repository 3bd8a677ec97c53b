/**
 * The platform's collection points, one call each (docs/observability.md, "Collection points"):
 * the queue, the supervisor, the scheduler and the API call these, and they feed the metrics
 * (./metrics.ts) and, when tracing is configured, the job's trace (./tracing.ts). Another consumer
 * of the same events (the console's time series) hangs off here.
 */
import type { Metrics } from "./metrics.ts";
import type { JobTrace, JobTracer, TracedJob } from "./tracing.ts";

/** A job as the queue holds it, with its trace when it is traced. */
interface Job extends TracedJob {
  trace?: JobTrace;
}

/** A worker's start and readiness when it was started at or after `since` and no job's trace has shown it yet. */
export type ColdStartOf = (workerId: string, since: number) => { from: number; to: number } | undefined;

export class Telemetry {
  /** Set once the supervisor exists (server.ts). */
  coldStartOf: ColdStartOf = () => undefined;

  constructor(
    /** Undefined when metrics are off (SVC_METRICS=0): the traces go on. */
    readonly metrics?: Metrics,
    readonly tracer?: JobTracer,
  ) {}

  /** /run, /runsync or a schedule queued a job; `traceparent` is the caller's W3C header. */
  jobAccepted(job: Job, traceparent: string | undefined): void {
    if (this.tracer) job.trace = this.tracer.accepted(job, traceparent);
  }

  /** A worker took the job (job.startedAt and job.workerId are set). */
  jobStarted(job: Job): void {
    this.metrics?.jobStarted(job.endpointId, job.createdAt, job.startedAt!);
    if (job.trace) this.tracer!.taken(job.trace, job, this.coldStartOf(job.workerId!, job.createdAt));
  }

  jobFinished(job: Job, status: string, finishedAt: number, errorType: string | null): void {
    this.metrics?.jobFinished(job.endpointId, status, job.startedAt, finishedAt);
    if (job.trace) this.tracer!.finished(job.trace, status, finishedAt, errorType);
  }

  /** The job goes back to the queue: a declared retry, or its worker died. */
  jobRequeued(job: Job, why: string): void {
    this.metrics?.jobRetried(job.endpointId);
    if (job.trace) this.tracer!.requeued(job.trace, why);
  }

  /** A worker answered its first job request or ping, `ms` after its process started. */
  workerReady(endpointId: string, ms: number): void {
    this.metrics?.workerColdStart(endpointId, ms);
  }

  workerOomKilled(endpointId: string): void {
    this.metrics?.workerOomKilled(endpointId);
  }

  scheduleFired(endpointId: string, skipped: boolean): void {
    this.metrics?.scheduleRun(endpointId, skipped);
  }

  /** A worker was handed `size` jobs in one answer. */
  batchTaken(endpointId: string, size: number): void {
    this.metrics?.batchTaken(endpointId, size);
  }

  httpRequest(route: string, method: string, code: number): void {
    this.metrics?.httpRequest(route, method, code);
  }
}
