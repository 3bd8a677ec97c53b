/**
 * One trace per job (docs/observability.md): a `job` span from acceptance to the final status,
 * under the caller's `traceparent` when /run or /runsync carried one, holding `queued` (accepted →
 * taken), `cold start` (when a worker was started for this job) and `run` (taken → done). The
 * worker gets the `run` span's traceparent with the job, and sends it on with its cross-endpoint
 * calls and `.map`: a callee's job is a child of its caller's run. Only the platform makes spans;
 * the Python runtime only carries the header. Exists only when tracing is configured: with it off,
 * the queue holds no tracer and a job no trace.
 */
import type { Span } from "@opentelemetry/api";
import { traceparentOf, type Otel } from "../../core/otel.ts";

/** A job's open spans. */
export interface JobTrace {
  job: Span;
  step: Span;
  /** The `run` span's traceparent, handed to the worker. */
  traceparent?: string;
}

/** What the tracer (and ./telemetry.ts) knows of a job: the queue's record (../queue/job-records.ts ActiveJob), by structure. */
export interface TracedJob {
  id: string;
  endpointId: string;
  kind: string;
  createdAt: number;
  startedAt: number | null;
  workerId: string | null;
  retries: number;
}

export class JobTracer {
  constructor(
    private readonly otel: Otel,
    private readonly endpointName: (endpointId: string) => string,
  ) {}

  accepted(job: TracedJob, traceparent: string | undefined): JobTrace {
    const { tracer } = this.otel;
    const parent = this.otel.parentOf(traceparent);
    const span = tracer.startSpan(
      `job ${this.endpointName(job.endpointId)}`,
      {
        startTime: job.createdAt,
        attributes: { "svc.job.id": job.id, "svc.endpoint.id": job.endpointId, "svc.job.kind": job.kind },
      },
      parent,
    );
    span.addEvent("accepted", job.createdAt);
    return { job: span, step: this.child(span, "queued", job.createdAt) };
  }

  /** A worker took the job; `coldStart` is its worker's start when that worker was started for this job. */
  taken(t: JobTrace, job: TracedJob, coldStart?: { from: number; to: number }): void {
    const at = job.startedAt ?? Date.now();
    t.step.end(at);
    if (coldStart) this.child(t.job, "cold start", coldStart.from, { "svc.worker.id": job.workerId ?? "" }).end(coldStart.to);
    t.step = this.child(t.job, "run", at, { "svc.worker.id": job.workerId ?? "", "svc.job.attempt": job.retries + 1 });
    t.step.addEvent("taken by a worker", at);
    t.traceparent = traceparentOf(t.step);
  }

  /** The job went back to the queue (a declared retry, or its worker died). */
  requeued(t: JobTrace, why: string): void {
    const now = Date.now();
    t.step.addEvent(why, now);
    t.step.end(now);
    t.step = this.child(t.job, "queued", now);
    t.traceparent = undefined;
  }

  finished(t: JobTrace, status: string, at: number, errorType: string | null): void {
    const { SpanStatusCode } = this.otel.api;
    if (errorType) t.step.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
    t.step.end(at);
    t.job.setAttribute("svc.job.status", status);
    if (status !== "COMPLETED") t.job.setStatus({ code: SpanStatusCode.ERROR, message: errorType ?? status });
    t.job.addEvent("done", at);
    t.job.end(at);
  }

  private child(parent: Span, name: string, at: number, attributes?: Record<string, string | number>): Span {
    const { api, tracer } = this.otel;
    return tracer.startSpan(name, { startTime: at, attributes }, api.trace.setSpan(api.ROOT_CONTEXT, parent));
  }
}
