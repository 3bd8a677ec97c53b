/** The jobs table's group commit: writes of one event-loop turn in one transaction (docs/platform.md, "Hot path"). */
import type { Db } from "./db.ts";

/**
 * Group commit: job writes of one event-loop turn go to SQLite in one transaction (setImmediate),
 * which costs a fraction of one autocommit per statement. Every read flushes pending writes
 * first, so reads always see them; `durable()` resolves once what was written so far is committed
 * (the /run route answers after it: an accepted job survives kill -9).
 */
const GROUP_COMMIT_MS = 2;
/** A commit that answered this many waiting requests means load: the next ones keep the spacing. */
const BUSY_WAITERS = 4;

export class WriteBatch {
  private ops: Array<(() => void) | null> = [];
  private waiters: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];
  private scheduled = false;
  /** Job id → index in `ops` of its "started" write, for the batch not yet committed. */
  private starts = new Map<string, number>();

  /** One transaction wrapper for every commit (better-sqlite3 builds a wrapper per `transaction()` call). */
  private readonly commit: (ops: Array<(() => void) | null>) => void;

  constructor(
    db: Db,
    private readonly onError: (error: unknown) => void,
  ) {
    this.commit = db.transaction((ops: Array<(() => void) | null>) => {
      for (const op of ops) if (op !== null) op();
    });
  }

  private lastFlush = 0;
  /** Whether the last commit answered BUSY_WAITERS requests or more. */
  private busy = false;
  /** The pending flush when it waits on a timer (GROUP_COMMIT_MS spacing). */
  private timer?: NodeJS.Timeout;

  add(op: () => void): void {
    this.ops.push(op);
    if (this.scheduled) return;
    this.scheduled = true;
    // Under light load a write commits on the next turn; under load commits are spaced
    // GROUP_COMMIT_MS apart so that one transaction carries many jobs' writes.
    const wait = this.lastFlush + GROUP_COMMIT_MS - performance.now();
    if (wait <= 0) setImmediate(() => this.flush());
    else this.timer = setTimeout(() => this.flush(), wait);
  }

  /** A job's "started" write: dropped again by `finished` if the job ends before this batch commits. */
  addStart(id: string, op: () => void): void {
    this.starts.set(id, this.ops.length);
    this.add(op);
  }

  /**
   * The job's final write is being added. If its "started" write is still in this uncommitted
   * batch, that write is dropped: the final write sets everything it would (status, started_at,
   * worker_id) and both commit in the same transaction or not at all, so no reader and no
   * restart can tell the difference (a crash before the commit loses both either way: the job is
   * still IN_QUEUE in the database and simply runs again).
   */
  finished(id: string): void {
    const at = this.starts.get(id);
    if (at === undefined) return;
    this.starts.delete(id);
    this.ops[at] = null;
  }

  /**
   * Resolves once what was written so far is committed. Someone waits on it (an answer is held
   * back), so the commit happens on the next turn, not after the spacing: it still carries every
   * write of this turn.
   */
  durable(): Promise<void> {
    if (this.ops.length === 0) return Promise.resolve();
    if (this.timer && !this.busy) {
      clearTimeout(this.timer);
      this.timer = undefined;
      setImmediate(() => this.flush());
    }
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  flush(): void {
    this.scheduled = false;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.ops.length === 0) return;
    this.lastFlush = performance.now();
    const ops = this.ops;
    const waiters = this.waiters;
    this.busy = waiters.length >= BUSY_WAITERS;
    this.ops = [];
    this.waiters = [];
    if (this.starts.size > 0) this.starts = new Map();
    try {
      this.commit(ops);
    } catch (error) {
      this.onError(error);
      for (const w of waiters) w.reject(error);
      return;
    }
    // Newest first: a runsync answer waits on the commit right after its worker's job-done does,
    // and a client waits on that answer (the worker's answer only acknowledges).
    for (let i = waiters.length - 1; i >= 0; i--) waiters[i]!.resolve();
  }
}
