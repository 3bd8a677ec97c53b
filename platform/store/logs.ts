/** Worker stdout/stderr lines, capped per endpoint; written in batches. */
import type { Db } from "./db.ts";

export function createLogsRepo(db: Db, capPerEndpoint: number) {
  const q = {
    insert: db.prepare("INSERT INTO worker_logs (endpoint_id, worker_id, ts, line) VALUES (?, ?, ?, ?)"),
    tail: db.prepare<[string, number], { worker_id: string; line: string }>(
      "SELECT worker_id, line FROM (SELECT id, worker_id, line FROM worker_logs WHERE endpoint_id = ? ORDER BY id DESC LIMIT ?) ORDER BY id",
    ),
    cutoff: db.prepare<[string, number], { id: number }>("SELECT id FROM worker_logs WHERE endpoint_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?"),
    trim: db.prepare("DELETE FROM worker_logs WHERE endpoint_id = ? AND id <= ?"),
    removeEndpoint: db.prepare("DELETE FROM worker_logs WHERE endpoint_id = ?"),
  };
  // Lines are written in batches (every 200 ms, see server.ts) with one statement per BLOCK lines.
  const BLOCK = 32;
  const insertBlock = db.prepare(`INSERT INTO worker_logs (endpoint_id, worker_id, ts, line) VALUES ${Array(BLOCK).fill("(?, ?, ?, ?)").join(", ")}`);
  const params: unknown[] = new Array(BLOCK * 4);
  let pending: Array<[string, string, number, string]> = [];
  const touched = new Set<string>();
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
    for (const endpointId of touched) {
      const cut = q.cutoff.get(endpointId, capPerEndpoint);
      if (cut) q.trim.run(endpointId, cut.id);
    }
    touched.clear();
  });
  return {
    append(endpointId: string, workerId: string, line: string): void {
      pending.push([endpointId, workerId, Date.now(), line.length > 8192 ? `${line.slice(0, 8192)}…` : line]);
      touched.add(endpointId);
    },
    flush(): void {
      if (pending.length === 0) return;
      const rows = pending;
      pending = [];
      flushTx(rows);
    },
    /** The newest `limit` lines, oldest first, as `[worker id] line`. */
    tail(endpointId: string, limit: number): string[] {
      return q.tail.all(endpointId, limit).map((r) => `[${r.worker_id}] ${r.line}`);
    },
    removeEndpoint: (endpointId: string): void => void q.removeEndpoint.run(endpointId),
  };
}
export type LogsRepo = ReturnType<typeof createLogsRepo>;
