/**
 * The jobs workers hold, by id and by worker: what a worker's result, progress or chunk is checked
 * against (a job is only its holder's to finish), what a dead worker hands back and what the
 * execution-timeout sweep walks. In memory only: a restart requeues running jobs from the store.
 */
import type { ActiveJob } from "./job-records.ts";

const NONE: ReadonlySet<string> = new Set();

export class RunningJobs {
  private readonly byId = new Map<string, ActiveJob>();
  private readonly byWorker = new Map<string, Set<string>>();

  /** `job` now runs on `workerId` (its `workerId` already set). */
  add(job: ActiveJob, workerId: string): void {
    this.byId.set(job.id, job);
    let held = this.byWorker.get(workerId);
    if (!held) this.byWorker.set(workerId, (held = new Set()));
    held.add(job.id);
  }

  /** `jobId` no longer runs (on `workerId`, when it had one). */
  remove(jobId: string, workerId: string | null): void {
    this.byId.delete(jobId);
    if (workerId === null) return;
    const held = this.byWorker.get(workerId);
    if (!held) return;
    held.delete(jobId);
    if (held.size === 0) this.byWorker.delete(workerId);
  }

  /** The running job `jobId` if `workerId` holds it. */
  heldBy(workerId: string, jobId: string): ActiveJob | undefined {
    const job = this.byId.get(jobId);
    return job && job.workerId === workerId ? job : undefined;
  }

  /** Ids of the jobs a worker runs. */
  jobsOf(workerId: string): ReadonlySet<string> {
    return this.byWorker.get(workerId) ?? NONE;
  }

  /** How many of an endpoint's jobs workers hold. */
  countOf(endpointId: string): number {
    let n = 0;
    for (const job of this.byId.values()) if (job.endpointId === endpointId) n++;
    return n;
  }

  /** Every running job (removing the one visited while iterating is safe). */
  values(): IterableIterator<ActiveJob> {
    return this.byId.values();
  }
}
