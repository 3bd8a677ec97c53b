/**
 * Worker stdout/stderr lines, capped per endpoint; written in batches. A deleted endpoint's lines
 * stay readable for LOG_RETENTION_MS (`svc logs` after an undeploy or a stopped `svc run`); its
 * name is kept beside them so they can be found by name (docs/dev-server.md, "Worker logs").
 */
import type { Db } from "./db.ts";
import { KeyedWaiters } from "../_keyed-waiters.ts";

/** Longest log line kept, in characters (64 Ki); a longer one is cut there (docs/platform.md, "Worker logs"). */
export const MAX_LOG_LINE = 65_536;
/** Ends a line that was cut: the rest of it is not kept. */
export const CUT_MARKER = ` … [line cut at ${MAX_LOG_LINE} characters by the platform; the rest of it is dropped]`;

/** How long the lines of a deleted endpoint are kept: 24 hours. */
export const LOG_RETENTION_MS = 24 * 3600_000;
/** How often the retention is applied (on a flush). */
const PRUNE_INTERVAL_MS = 60_000;
/**
 * How long a line waits for the lines after it: they are written together, and small batches
 * hold the platform's one thread briefly. No line pending, no timer (an idle platform sleeps).
 */
const LOG_FLUSH_MS = 50;
/** Lines an endpoint may hold over its cap before its oldest are deleted (in one small delete). */
const TRIM_SLACK = 100;
/** Characters an endpoint's lines may hold (16 Mi): 5,000 lines of 64 Ki would be 320 MB of database. */
export const DEFAULT_LOG_CHARS = 16 * 1024 * 1024;
/** ...and the share over it they may reach before the oldest go, down to the cap (the trim is then rare under a flood). */
const CHARS_SLACK = 0.25;

/** What an endpoint's lines may hold: lines and characters, whichever comes first. */
export interface LogCaps {
  lines: number;
  chars: number;
}

export interface LogLine {
  /** Increasing per platform: the cursor of `svc logs --follow`. */
  id: number;
  /** ms since the epoch. */
  ts: number;
  workerId: string;
  line: string;
}

export interface RetiredEndpoint {
  id: string;
  name: string;
  environmentId: string | null;
  /** ms since the epoch. */
  deletedAt: number;
}

type Row = { id: number; ts: number; worker_id: string; line: string };
type RetiredRow = { endpoint_id: string; name: string; environment_id: string | null; deleted_at: number };

export interface LogsRepo {
  append(endpointId: string, workerId: string, line: string): void;
  /** Writes the pending lines; applies the retention when it is due (the platform's sweep calls it too). */
  flush(now?: number): void;
  /** Drops the lines of endpoints deleted more than the retention ago. */
  prune(now?: number): void;
  /** The newest `limit` lines, oldest first, as `[worker id] line`. */
  tail(endpointId: string, limit: number): string[];
  /** Lines after the cursor `after` (oldest first, at most `limit`), or the newest `limit` since `since` (ms). */
  lines(endpointId: string, options: { after?: number; since?: number; limit: number }): LogLine[];
  /** Resolves true when a line of the endpoint comes, false after `waitMs` (`svc logs -f`'s open request). */
  nextLine(endpointId: string, waitMs: number): Promise<boolean>;
  /** Answers every nextLine wait (false): the store closes. */
  close(): void;
  /** The endpoint was deleted: its lines stay readable for the retention, findable by its name. */
  retire(endpoint: { id: string; name: string; environmentId?: string | null }, now?: number): void;
  retired(endpointId: string): RetiredEndpoint | undefined;
  /** Deleted endpoints whose lines are still kept, newest first; by name when given. */
  retiredEndpoints(name?: string): RetiredEndpoint[];
}

export function createLogsRepo(db: Db, caps: LogCaps, retentionMs = LOG_RETENTION_MS): LogsRepo {
  const q = logStatements(db);
  const { flushTx, pruneTx, touched } = lineWriter(db, q, caps);
  let pending: Array<[string, string, number, string]> = [];
  let prunedAt = 0;
  let flushTimer: NodeJS.Timeout | undefined;
  const next = new KeyedWaiters<boolean>();
  let waiting = 0;
  const toLine = (r: Row): LogLine => ({ id: r.id, ts: r.ts, workerId: r.worker_id, line: r.line });
  const toRetired = (r: RetiredRow): RetiredEndpoint => ({ id: r.endpoint_id, name: r.name, environmentId: r.environment_id, deletedAt: r.deleted_at });

  const repo = {
    append(endpointId: string, workerId: string, line: string): void {
      pending.push([endpointId, workerId, Date.now(), line.length > MAX_LOG_LINE + CUT_MARKER.length ? line.slice(0, MAX_LOG_LINE) + CUT_MARKER : line]);
      const added = touched.get(endpointId);
      if (added) {
        added.lines++;
        added.chars += line.length;
      } else touched.set(endpointId, { lines: 1, chars: line.length });
      if (!flushTimer) {
        flushTimer = setTimeout(() => db.open && repo.flush(), LOG_FLUSH_MS); // a line after close stays unwritten
        flushTimer.unref();
      }
      if (waiting > 0) next.notify(endpointId, true);
    },
    async nextLine(endpointId: string, waitMs: number): Promise<boolean> {
      waiting++;
      try {
        return await next.wait(endpointId, waitMs, false);
      } finally {
        waiting--;
      }
    },
    close(): void {
      next.close(() => false);
    },
    flush(now = Date.now()): void {
      if (flushTimer) {
        clearTimeout(flushTimer);
        flushTimer = undefined;
      }
      if (pending.length > 0) {
        const rows = pending;
        pending = [];
        flushTx(rows);
      }
      if (now - prunedAt >= PRUNE_INTERVAL_MS) repo.prune(now);
    },
    prune(now = Date.now()): void {
      prunedAt = now;
      pruneTx(now - retentionMs);
    },
    tail(endpointId: string, limit: number): string[] {
      return q.newest.all(endpointId, 0, limit).map((r) => `[${r.worker_id}] ${r.line}`);
    },
    lines(endpointId: string, options: { after?: number; since?: number; limit: number }): LogLine[] {
      const rows =
        options.after !== undefined ? q.after.all(endpointId, options.after, options.limit) : q.newest.all(endpointId, options.since ?? 0, options.limit);
      return rows.map(toLine);
    },
    retire(endpoint: { id: string; name: string; environmentId?: string | null }, now = Date.now()): void {
      repo.flush(now);
      q.retire.run(endpoint.id, endpoint.name, endpoint.environmentId ?? null, now);
    },
    retired: (endpointId: string): RetiredEndpoint | undefined => {
      const row = q.retired.get(endpointId);
      return row ? toRetired(row) : undefined;
    },
    retiredEndpoints: (name?: string): RetiredEndpoint[] => (name === undefined ? q.retiredAll.all() : q.retiredByName.all(name)).map(toRetired),
  };
  repo.prune();
  return repo;
}

/** The worker logs' prepared statements (the retired endpoints' table is made here). */
function logStatements(db: Db) {
  db.exec(`CREATE TABLE IF NOT EXISTS retired_log_endpoints (
  endpoint_id TEXT PRIMARY KEY, name TEXT NOT NULL, environment_id TEXT, deleted_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS retired_log_endpoints_name ON retired_log_endpoints (name);`);
  const q = {
    insert: db.prepare("INSERT INTO worker_logs (endpoint_id, worker_id, ts, line) VALUES (?, ?, ?, ?)"),
    newest: db.prepare<[string, number, number], Row>(
      "SELECT * FROM (SELECT id, ts, worker_id, line FROM worker_logs WHERE endpoint_id = ? AND ts >= ? ORDER BY id DESC LIMIT ?) ORDER BY id",
    ),
    after: db.prepare<[string, number, number], Row>("SELECT id, ts, worker_id, line FROM worker_logs WHERE endpoint_id = ? AND id > ? ORDER BY id LIMIT ?"),
    count: db.prepare<[string], { n: number; chars: number | null }>("SELECT COUNT(*) AS n, SUM(length(line)) AS chars FROM worker_logs WHERE endpoint_id = ?"),
    trimOldest: db.prepare("DELETE FROM worker_logs WHERE id IN (SELECT id FROM worker_logs WHERE endpoint_id = ? ORDER BY id LIMIT ?)"),
    // the newest lines that hold at most `chars` characters begin after this id
    charsFrom: db.prepare<[string, number], { id: number }>(
      "SELECT id FROM (SELECT id, SUM(length(line)) OVER (ORDER BY id DESC) AS newer FROM worker_logs WHERE endpoint_id = ?) WHERE newer > ? ORDER BY id DESC LIMIT 1",
    ),
    trimThrough: db.prepare("DELETE FROM worker_logs WHERE endpoint_id = ? AND id <= ?"),
    retire: db.prepare("INSERT OR REPLACE INTO retired_log_endpoints (endpoint_id, name, environment_id, deleted_at) VALUES (?, ?, ?, ?)"),
    retired: db.prepare<[string], RetiredRow>("SELECT * FROM retired_log_endpoints WHERE endpoint_id = ?"),
    retiredByName: db.prepare<[string], RetiredRow>("SELECT * FROM retired_log_endpoints WHERE name = ? ORDER BY deleted_at DESC"),
    retiredAll: db.prepare<[], RetiredRow>("SELECT * FROM retired_log_endpoints ORDER BY deleted_at DESC"),
    expired: db.prepare<[number], { endpoint_id: string }>("SELECT endpoint_id FROM retired_log_endpoints WHERE deleted_at < ?"),
    removeLines: db.prepare("DELETE FROM worker_logs WHERE endpoint_id = ?"),
    removeRetired: db.prepare("DELETE FROM retired_log_endpoints WHERE endpoint_id = ?"),
  };
  return q;
}

/** Writes batches of lines and trims each endpoint to its caps; prunes retired endpoints' lines. */
function lineWriter(db: Db, q: ReturnType<typeof logStatements>, caps: LogCaps) {
  // Lines are written in batches (LOG_FLUSH_MS after the first) with one statement per BLOCK
  // lines. The lines (and characters) each endpoint holds are counted once, then tracked: trimming
  // to the caps deletes its oldest lines once TRIM_SLACK more lines (or CHARS_SLACK more characters)
  // have come (no walk over the cap's worth of index entries per batch).
  const BLOCK = 32;
  const kept = new Map<string, { lines: number; chars: number }>();
  const insertBlock = db.prepare(`INSERT INTO worker_logs (endpoint_id, worker_id, ts, line) VALUES ${Array(BLOCK).fill("(?, ?, ?, ?)").join(", ")}`);
  const params: unknown[] = new Array(BLOCK * 4);
  const touched = new Map<string, { lines: number; chars: number }>(); // endpoint → pending
  const counted = (endpointId: string) => {
    const row = q.count.get(endpointId)!;
    return { lines: row.n, chars: row.chars ?? 0 };
  };
  const flushTx = db.transaction((rows: Array<[string, string, number, string]>) => {
    let i = 0;
    for (; i + BLOCK <= rows.length; i += BLOCK) {
      for (let k = 0; k < BLOCK; k++) {
        const row = rows[i + k]!;
        params[k * 4] = row[0];
        params[k * 4 + 1] = row[1];
        params[k * 4 + 2] = row[2];
        params[k * 4 + 3] = row[3];
      }
      insertBlock.run(params);
    }
    for (; i < rows.length; i++) q.insert.run(...rows[i]!);
    for (const [endpointId, added] of touched) {
      const known = kept.get(endpointId);
      let n = known ? { lines: known.lines + added.lines, chars: known.chars + added.chars } : counted(endpointId);
      if (n.chars > caps.chars * (1 + CHARS_SLACK)) {
        const from = q.charsFrom.get(endpointId, caps.chars);
        if (from) q.trimThrough.run(endpointId, from.id);
        n = counted(endpointId);
      }
      if (n.lines > caps.lines + TRIM_SLACK) {
        q.trimOldest.run(endpointId, n.lines - caps.lines);
        n = counted(endpointId);
      }
      kept.set(endpointId, n);
    }
    touched.clear();
  });
  const pruneTx = db.transaction((before: number) => {
    for (const { endpoint_id } of q.expired.all(before)) {
      q.removeLines.run(endpoint_id);
      kept.delete(endpoint_id);
      q.removeRetired.run(endpoint_id);
    }
  });
  return { flushTx, pruneTx, touched };
}
