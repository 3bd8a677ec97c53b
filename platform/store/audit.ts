/** The audit log (../history/audit.ts): who did which management action to what, and how it ended. */
import type { Db } from "./db.ts";

export interface AuditRow {
  seq: number;
  at: number;
  keyName: string;
  action: string;
  app: string | null;
  target: string | null;
  /** "ok", else the error's catalogue code. */
  outcome: string;
}

type RawAudit = { seq: number; at: number; key_name: string; action: string; app: string | null; target: string | null; outcome: string };

export interface AuditRepo {
  add(entry: Omit<AuditRow, "seq">, keep: number): void;
  /** Newest first. */
  list(limit: number): AuditRow[];
}

export function createAuditRepo(db: Db): AuditRepo {
  const q = {
    insert: db.prepare("INSERT INTO audit (at, key_name, action, app, target, outcome) VALUES (?, ?, ?, ?, ?, ?)"),
    trim: db.prepare("DELETE FROM audit WHERE seq <= ?"),
    list: db.prepare<[number], RawAudit>("SELECT * FROM audit ORDER BY seq DESC LIMIT ?"),
  };
  return {
    add(e, keep) {
      const seq = Number(q.insert.run(e.at, e.keyName, e.action, e.app, e.target, e.outcome).lastInsertRowid);
      q.trim.run(seq - keep);
    },
    list: (limit) =>
      q.list.all(limit).map((r) => ({ seq: r.seq, at: r.at, keyName: r.key_name, action: r.action, app: r.app, target: r.target, outcome: r.outcome })),
  };
}
