/**
 * Declared retries (`retries=` in an endpoint's build, docs/platform.md "Retries"): how long a
 * failed job waits before it runs again, and the jobs waiting out that wait. Such a job stays
 * IN_QUEUE and counted as queued, but joins its endpoint's FIFO only when its wait is over.
 */
import type { RetryPolicy } from "../../core/endpoint-schema.ts";
import type { ActiveJob } from "./job-records.ts";

/** Failures a declared retry would repeat: the input, or a result the platform cannot take. */
const NEVER_RETRIED = new Set(["InputValidationError", "JOB_OUTPUT_INVALID", "OutputRefusedError", "OutputNotJSONError"]);

/** The wait before a failed job's declared retry, or undefined when it fails now (none declared, none left, or a failure a retry would repeat). */
export function retryDelayMs(
  job: ActiveJob,
  errorType: string | null,
  policies: { retryPolicy?(endpointId: string): RetryPolicy | undefined },
): number | undefined {
  if (errorType !== null && NEVER_RETRIED.has(errorType)) return undefined;
  const policy = policies.retryPolicy?.(job.endpointId);
  if (!policy || job.retries >= policy.maxRetries) return undefined;
  return policy.initialDelayMs * policy.backoff ** job.retries;
}

/** Jobs waiting out a declared retry's delay, each with the timer that queues it again. */
export class DelayedRetries {
  private readonly waiting = new Map<string, { job: ActiveJob; timer: NodeJS.Timeout }>();

  /** Calls `due` after `delayMs`, unless the job is cancelled first; the timer keeps no process alive. */
  schedule(job: ActiveJob, delayMs: number, due: () => void): void {
    const timer = setTimeout(() => {
      this.waiting.delete(job.id);
      due();
    }, delayMs);
    timer.unref();
    this.waiting.set(job.id, { job, timer });
  }

  /** The job left memory (finished, cancelled, expired, purged): it is not queued again. */
  cancel(jobId: string): void {
    const entry = this.waiting.get(jobId);
    if (!entry) return;
    clearTimeout(entry.timer);
    this.waiting.delete(jobId);
  }

  /** An endpoint's jobs waiting out a delay. */
  jobsOf(endpointId: string): ActiveJob[] {
    const jobs: ActiveJob[] = [];
    for (const { job } of this.waiting.values()) if (job.endpointId === endpointId) jobs.push(job);
    return jobs;
  }

  /** Stops every wait (shutdown): the jobs stay stored IN_QUEUE and are recovered on the next start. */
  close(): void {
    for (const { timer } of this.waiting.values()) clearTimeout(timer);
    this.waiting.clear();
  }
}
