/** Jobs: every state change is written before it is acknowledged (prepared statements only). */
import type { JobStatus } from "../../core/client/types.ts";
import type { Db } from "./db.ts";
import { WriteBatch } from "./write-batch.ts";

export type { JobStatus };
export type JobKind = "run" | "runsync";

export interface JobRow {
  id: string;
  endpoint_id: string;
  status: JobStatus;
  kind: JobKind;
  input: string;
  output: string | null;
  error: string | null;
  error_type: string | null;
  webhook: string | null;
  execution_timeout_ms: number;
  ttl_ms: number;
  low_priority: number;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  worker_id: string | null;
  retries: number;
  handbacks: number;
  prune_at: number | null;
  has_stream: number;
  stream_cursor: number;
}

export interface NewJob {
  id: string;
  endpointId: string;
  kind: JobKind;
  /** JSON text of the job input. */
  input: string;
  webhook: string | null;
  executionTimeoutMs: number;
  ttlMs: number;
  lowPriority: boolean;
  createdAt: number;
}

export interface FinalUpdate {
  status: JobStatus;
  output: string | null;
  error: string | null;
  errorType: string | null;
  finishedAt: number;
  startedAt: number | null;
  workerId: string | null;
  pruneAt: number;
}

export type RecentJob = Omit<JobRow, "input" | "output"> & { input_bytes: number };

export interface JobsRepo {
  /** Resolves when every write so far, and the held job `id` if given, is committed. */
  durable(id?: string): Promise<void>;
  /** Commits everything now, held jobs included. */
  flush(): void;
  /** `hold`: a runsync job, written with its final write when nothing needs it sooner. */
  insert(j: NewJob, hold?: boolean): void;
  start(id: string, startedAt: number, workerId: string): void;
  finish(id: string, u: FinalUpdate): void;
  requeue(id: string, handbacks: number): void;
  retry(id: string, createdAt: number): void;
  get(id: string): JobRow | undefined;
  active(): JobRow[];
  /** Deletes the job (a held one was never written: nothing to delete). */
  remove(id: string): void;
  /** Deletes up to `limit` jobs whose retention ran out, oldest first; returns how many. */
  prune(now: number, limit: number): number;
  addChunk(id: string, seq: number, chunk: string): void;
  chunksFrom(id: string, seq: number): Array<{ seq: number; chunk: string }>;
  setStreamCursor(id: string, cursor: number): void;
  counts(endpointId: string): { status: JobStatus; n: number; retried: number }[];
  /** The endpoint's newest jobs (of one status when given), newest first, without input and output (the console). */
  recent(endpointId: string, status: JobStatus | null, limit: number): RecentJob[];
  removeEndpoint(endpointId: string): void;
}

export function createJobsRepo(db: Db, onError: (error: unknown) => void = (e) => console.error(e)): JobsRepo {
  const batch = new WriteBatch(db, onError);
  const { q, pruneTx, removeEndpointTx, removeTx, requeueTx, retryTx, chunkTx } = jobStatements(db);

  const { held, writeInsert, writeStart, release, releaseWhere } = heldJobs(batch, q);

  const read = <T>(fn: () => T): T => {
    batch.flush();
    return fn();
  };

  return {
    durable: (id?: string): Promise<void> => {
      if (id !== undefined) release(id);
      return batch.durable();
    },
    flush: (): void => {
      releaseWhere(() => true);
      batch.flush();
    },
    insert: (j: NewJob, hold = false): void => {
      if (hold) held.set(j.id, { job: j });
      else writeInsert(j);
    },
    start: (id: string, startedAt: number, workerId: string): void => {
      const h = held.get(id);
      if (h) h.start = [startedAt, workerId];
      else writeStart(id, startedAt, workerId);
    },
    finish: (id: string, u: FinalUpdate): void => {
      const h = held.get(id);
      if (h) {
        held.delete(id);
        batch.add(() => insertFinished(q, h.job, u)); // one INSERT of the finished row: no IN_QUEUE row, no start, no UPDATE
        return;
      }
      batch.finished(id); // a "started" write still pending is redundant now (same transaction)
      batch.add(() => q.finish.run(u.status, u.output, u.error, u.errorType, u.finishedAt, u.startedAt, u.workerId, u.pruneAt, id));
    },
    requeue: (id: string, handbacks: number): void => {
      release(id);
      batch.add(() => requeueTx(id, handbacks));
    },
    retry: (id: string, createdAt: number): void => batch.add(() => retryTx(id, createdAt)),
    get: (id: string): JobRow | undefined => {
      release(id);
      return read(() => q.get.get(id));
    },
    active: (): JobRow[] => {
      releaseWhere(() => true);
      return read(() => q.active.all());
    },
    remove: (id: string): void => {
      if (!held.delete(id)) batch.add(() => removeTx(id));
    },
    prune(now: number, limit: number): number {
      return read(() => pruneTx(now, limit));
    },
    addChunk: (id: string, seq: number, chunk: string): void => {
      release(id);
      batch.add(() => chunkTx(id, seq, chunk));
    },
    chunksFrom: (id: string, seq: number): Array<{ seq: number; chunk: string }> => {
      release(id);
      return read(() => q.chunksFrom.all(id, seq));
    },
    setStreamCursor: (id: string, cursor: number): void => {
      release(id);
      batch.add(() => q.setCursor.run(cursor, id));
    },
    counts: (endpointId: string) => {
      releaseWhere((j) => j.endpointId === endpointId);
      return read(() => q.counts.all(endpointId));
    },
    recent: (endpointId: string, status: JobStatus | null, limit: number) => {
      // Held runsync jobs are shown from memory, not written for it: the console must not undo the hot path's one INSERT.
      const pending = [...held.values()].filter((h) => h.job.endpointId === endpointId).map(heldRow);
      const rows = read(() => q.recent.all(endpointId, status, status, limit));
      return [...pending.filter((r) => status === null || r.status === status), ...rows].sort((a, b) => b.created_at - a.created_at).slice(0, limit);
    },
    removeEndpoint: (endpointId: string): void => {
      for (const [id, h] of held) if (h.job.endpointId === endpointId) held.delete(id);
      read(() => removeEndpointTx(endpointId));
    },
  };
}

/** A held job that finished before it was written: its one row, final. */
function insertFinished(q: ReturnType<typeof jobStatements>["q"], j: NewJob, u: FinalUpdate): void {
  q.insertFinal.run(
    j.id,
    j.endpointId,
    u.status,
    j.kind,
    j.input,
    j.webhook,
    j.executionTimeoutMs,
    j.ttlMs,
    j.lowPriority ? 1 : 0,
    j.createdAt,
    u.output,
    u.error,
    u.errorType,
    u.finishedAt,
    u.startedAt,
    u.workerId,
    u.pruneAt,
  );
}

/** The jobs table's prepared statements, and the transactions of more than one of them. */
function jobStatements(db: Db) {
  const q = {
    insert: db.prepare(
      "INSERT INTO jobs (id, endpoint_id, status, kind, input, webhook, execution_timeout_ms, ttl_ms, low_priority, created_at) VALUES (?, ?, 'IN_QUEUE', ?, ?, ?, ?, ?, ?, ?)",
    ),
    insertFinal: db.prepare(
      "INSERT INTO jobs (id, endpoint_id, status, kind, input, webhook, execution_timeout_ms, ttl_ms, low_priority, created_at, output, error, error_type, finished_at, started_at, worker_id, prune_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ),
    start: db.prepare("UPDATE jobs SET status = 'IN_PROGRESS', started_at = ?, worker_id = ? WHERE id = ?"),
    finish: db.prepare(
      "UPDATE jobs SET status = ?, output = ?, error = ?, error_type = ?, finished_at = ?, started_at = ?, worker_id = ?, prune_at = ? WHERE id = ?",
    ),
    requeue: db.prepare(
      "UPDATE jobs SET status = 'IN_QUEUE', started_at = NULL, worker_id = NULL, retries = retries + 1, handbacks = ?, stream_cursor = 0 WHERE id = ?",
    ),
    retry: db.prepare(
      "UPDATE jobs SET status = 'IN_QUEUE', output = NULL, error = NULL, error_type = NULL, started_at = NULL, finished_at = NULL, worker_id = NULL, prune_at = NULL, retries = retries + 1, handbacks = 0, created_at = ?, stream_cursor = 0 WHERE id = ?",
    ),
    get: db.prepare<[string], JobRow>("SELECT * FROM jobs WHERE id = ?"),
    recent: db.prepare<[string, string | null, string | null, number], RecentJob>(
      `SELECT id, endpoint_id, status, kind, error, error_type, webhook, execution_timeout_ms, ttl_ms, low_priority, created_at, started_at,
       finished_at, worker_id, retries, handbacks, prune_at, has_stream, stream_cursor, length(CAST(input AS BLOB)) AS input_bytes
       FROM jobs WHERE endpoint_id = ? AND (? IS NULL OR status = ?) ORDER BY created_at DESC, rowid DESC LIMIT ?`,
    ),
    // By enqueue time: a held runsync job is written later than jobs enqueued after it.
    active: db.prepare<[], JobRow>("SELECT * FROM jobs WHERE status IN ('IN_QUEUE', 'IN_PROGRESS') ORDER BY created_at, rowid"),
    remove: db.prepare("DELETE FROM jobs WHERE id = ?"),
    // One statement per chunk (a statement per row cost ~6 µs a job); both pick the same jobs: the
    // oldest expired ones, in index order.
    pruneStreams: db.prepare(
      "DELETE FROM job_stream WHERE job_id IN (SELECT id FROM jobs WHERE prune_at IS NOT NULL AND prune_at < ? AND has_stream = 1 ORDER BY prune_at, rowid LIMIT ?)",
    ),
    prune: db.prepare("DELETE FROM jobs WHERE rowid IN (SELECT rowid FROM jobs WHERE prune_at IS NOT NULL AND prune_at < ? ORDER BY prune_at, rowid LIMIT ?)"),
    removeStream: db.prepare("DELETE FROM job_stream WHERE job_id = ?"),
    addChunk: db.prepare("INSERT INTO job_stream (job_id, seq, chunk) VALUES (?, ?, ?)"),
    markStream: db.prepare("UPDATE jobs SET has_stream = 1 WHERE id = ? AND has_stream = 0"),
    chunksFrom: db.prepare<[string, number], { seq: number; chunk: string }>("SELECT seq, chunk FROM job_stream WHERE job_id = ? AND seq >= ? ORDER BY seq"),
    setCursor: db.prepare("UPDATE jobs SET stream_cursor = ? WHERE id = ?"),
    counts: db.prepare<[string], { status: JobStatus; n: number; retried: number }>(
      "SELECT status, COUNT(*) AS n, SUM(retries > 0) AS retried FROM jobs WHERE endpoint_id = ? GROUP BY status",
    ),
    removeEndpoint: db.prepare("DELETE FROM jobs WHERE endpoint_id = ?"),
    removeEndpointStreams: db.prepare("DELETE FROM job_stream WHERE job_id IN (SELECT id FROM jobs WHERE endpoint_id = ? AND has_stream = 1)"),
  };
  const pruneTx = db.transaction((now: number, limit: number): number => {
    q.pruneStreams.run(now, limit);
    return q.prune.run(now, limit).changes;
  });
  const removeEndpointTx = db.transaction((endpointId: string) => {
    q.removeEndpointStreams.run(endpointId);
    q.removeEndpoint.run(endpointId);
  });
  const removeTx = db.transaction((id: string) => {
    q.removeStream.run(id);
    q.remove.run(id);
  });
  const requeueTx = db.transaction((id: string, handbacks: number) => {
    q.requeue.run(handbacks, id);
    q.removeStream.run(id);
  });
  const retryTx = db.transaction((id: string, createdAt: number) => {
    q.retry.run(createdAt, id);
    q.removeStream.run(id);
  });
  const chunkTx = db.transaction((id: string, seq: number, chunk: string) => {
    if (seq === 0) q.markStream.run(id);
    q.addChunk.run(id, seq, chunk);
  });
  return { q, pruneTx, removeEndpointTx, removeTx, requeueTx, retryTx, chunkTx };
}

/** A held (unwritten) job as the console's list shows it. */
const heldRow = ({ job: j, start }: { job: NewJob; start?: [number, string] }): RecentJob => ({
  id: j.id,
  endpoint_id: j.endpointId,
  status: start ? "IN_PROGRESS" : "IN_QUEUE",
  kind: j.kind,
  error: null,
  error_type: null,
  webhook: j.webhook,
  execution_timeout_ms: j.executionTimeoutMs,
  ttl_ms: j.ttlMs,
  low_priority: j.lowPriority ? 1 : 0,
  created_at: j.createdAt,
  started_at: start?.[0] ?? null,
  finished_at: null,
  worker_id: start?.[1] ?? null,
  retries: 0,
  handbacks: 0,
  prune_at: null,
  has_stream: 0,
  stream_cursor: 0,
  input_bytes: Buffer.byteLength(j.input),
});

/**
 * Held runsync jobs: not written yet (docs/platform.md, "Hot path"). A runsync job is
 * acknowledged only with its answer, so its insert can wait for its final write and both go
 * to SQLite as one INSERT of the finished row. Anything else that touches the job, a read
 * that could see it, or an answer that names it (`durable(id)`) writes it first.
 */
function heldJobs(batch: WriteBatch, q: ReturnType<typeof jobStatements>["q"]) {
  const held = new Map<string, { job: NewJob; start?: [startedAt: number, workerId: string] }>();
  const writeInsert = (j: NewJob): void =>
    batch.add(() => q.insert.run(j.id, j.endpointId, j.kind, j.input, j.webhook, j.executionTimeoutMs, j.ttlMs, j.lowPriority ? 1 : 0, j.createdAt));
  const writeStart = (id: string, startedAt: number, workerId: string): void => batch.addStart(id, () => q.start.run(startedAt, workerId, id));
  /** Writes a held job now (its insert, then its start), ahead of any later write of it. */
  const release = (id: string): void => {
    const h = held.get(id);
    if (!h) return;
    held.delete(id);
    writeInsert(h.job);
    if (h.start) writeStart(id, h.start[0], h.start[1]);
  };
  const releaseWhere = (match: (job: NewJob) => boolean): void => {
    for (const [id, h] of held) if (match(h.job)) release(id);
  };
  return { held, writeInsert, writeStart, release, releaseWhere };
}
