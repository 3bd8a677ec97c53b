/** Worker processes the platform started: kept so that a restart can stop orphans of a crashed run. */
import type { Db } from "./db.ts";

export interface WorkersRepo {
  started(id: string, endpointId: string, buildId: string | null, pid: number | null): void;
  stopped(id: string): void;
  /** Workers recorded as running (after a crash: orphans). */
  live(): Array<{ id: string; pid: number | null }>;
  markAllStopped(): void;
  prune(before: number): void;
}

export function createWorkersRepo(db: Db): WorkersRepo {
  const q = {
    insert: db.prepare("INSERT INTO workers (id, endpoint_id, build_id, pid, started_at) VALUES (?, ?, ?, ?, ?)"),
    stopped: db.prepare("UPDATE workers SET stopped_at = ? WHERE id = ?"),
    live: db.prepare<[], { id: string; pid: number | null }>("SELECT id, pid FROM workers WHERE stopped_at IS NULL"),
    stopAll: db.prepare("UPDATE workers SET stopped_at = ? WHERE stopped_at IS NULL"),
    prune: db.prepare("DELETE FROM workers WHERE stopped_at IS NOT NULL AND stopped_at < ?"),
  };
  return {
    started: (id: string, endpointId: string, buildId: string | null, pid: number | null): void => void q.insert.run(id, endpointId, buildId, pid, Date.now()),
    stopped: (id: string): void => void q.stopped.run(Date.now(), id),
    live: (): Array<{ id: string; pid: number | null }> => q.live.all(),
    markAllStopped: (): void => void q.stopAll.run(Date.now()),
    prune: (before: number): void => void q.prune.run(before),
  };
}
