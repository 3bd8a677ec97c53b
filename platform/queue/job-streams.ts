/**
 * Streamed output of jobs (/stream, reference section 1): chunks are stored as the worker sends
 * them; a reader gets those it has not read yet, waiting up to its wait for one while the job runs.
 */
import type { JobsRepo } from "../store/jobs.ts";
import type { JobStatus } from "../store/index.ts";
import type { ActiveJob } from "./job-records.ts";
import { KeyedWaiters } from "../_keyed-waiters.ts";

export type StreamRead = { status: JobStatus; chunks: string[] } | undefined;

export class JobStreams {
  /** Readers waiting for a chunk: true when woken, false when their wait ran out. */
  private readonly waiters = new KeyedWaiters<boolean>();

  /** `active`: the queue's jobs waiting or running (finished ones are read from the database). */
  constructor(
    private readonly jobs: JobsRepo,
    private readonly active: ReadonlyMap<string, ActiveJob>,
  ) {}

  add(job: ActiveJob, chunk: string): void {
    this.jobs.addChunk(job.id, job.streamSeq++, chunk);
    this.wake(job.id);
  }

  /** Chunks not yet read by a /stream caller, waiting up to `waitMs` for one while the job runs. */
  async read(jobId: string, endpointId: string, waitMs: number): Promise<StreamRead> {
    const first = this.readNow(jobId, endpointId);
    if (!first || first.chunks.length > 0 || waitMs <= 0 || !this.active.has(jobId)) return first;
    await this.waiters.wait(jobId, waitMs, false);
    return this.readNow(jobId, endpointId);
  }

  private readNow(jobId: string, endpointId: string): StreamRead {
    const job = this.active.get(jobId);
    if (job) {
      if (job.endpointId !== endpointId) return undefined;
      const rows = job.streamSeq > job.streamCursor ? this.jobs.chunksFrom(jobId, job.streamCursor) : [];
      job.streamCursor += rows.length;
      return { status: job.status, chunks: rows.map((r) => r.chunk) };
    }
    const row = this.jobs.get(jobId);
    if (!row || row.endpoint_id !== endpointId) return undefined;
    const rows = row.has_stream ? this.jobs.chunksFrom(jobId, row.stream_cursor) : [];
    if (rows.length > 0) this.jobs.setStreamCursor(jobId, row.stream_cursor + rows.length);
    return { status: row.status, chunks: rows.map((r) => r.chunk) };
  }

  /** A chunk came or the job ended: waiting readers read now. */
  wake(jobId: string): void {
    this.waiters.notify(jobId, true);
  }

  /** Ends every wait (shutdown). */
  close(): void {
    this.waiters.close(() => true);
  }
}
