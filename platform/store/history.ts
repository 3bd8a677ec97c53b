/**
 * Deploy history (../history/deploys.ts): one row per switch of an environment to a build, with the
 * endpoints' settings it left live (what a rollback to it restores) and what it changed.
 */
import type { Db } from "./db.ts";
import type { EndpointRecord } from "./endpoints.ts";

export interface EndpointChanges {
  added: string[];
  changed: string[];
  removed: string[];
}
export interface GitSource {
  commit: string;
  dirty: boolean;
}
export interface DeployRow {
  seq: number;
  environmentId: string;
  buildId: string;
  kind: "deploy" | "rollback";
  keyName: string;
  at: number;
  git: GitSource | null;
  changes: EndpointChanges;
  endpoints: EndpointRecord[];
}

type RawDeploy = {
  seq: number;
  environment_id: string;
  build_id: string;
  kind: string;
  key_name: string;
  at: number;
  git: string | null;
  changes: string;
  endpoints: string;
};

const row = (r: RawDeploy): DeployRow => ({
  seq: r.seq,
  environmentId: r.environment_id,
  buildId: r.build_id,
  kind: r.kind as DeployRow["kind"],
  keyName: r.key_name,
  at: r.at,
  git: r.git ? (JSON.parse(r.git) as GitSource) : null,
  changes: JSON.parse(r.changes) as EndpointChanges,
  endpoints: JSON.parse(r.endpoints) as EndpointRecord[],
});

export interface HistoryRepo {
  add(entry: Omit<DeployRow, "seq">): DeployRow;
  /** Newest first. */
  forEnvironment(environmentId: string): DeployRow[];
  /** Drops all but the newest `keep` rows of the environment; answers the build ids of the rows dropped. */
  trim(environmentId: string, keep: number): string[];
  /** Is the build in any environment's kept history? */
  refersTo(buildId: string): boolean;
}

export function createHistoryRepo(db: Db): HistoryRepo {
  const q = {
    insert: db.prepare("INSERT INTO deploys (environment_id, build_id, kind, key_name, at, git, changes, endpoints) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
    forEnv: db.prepare<[string], RawDeploy>("SELECT * FROM deploys WHERE environment_id = ? ORDER BY seq DESC"),
    old: db.prepare<[string, number], { seq: number; build_id: string }>(
      "SELECT seq, build_id FROM deploys WHERE environment_id = ? ORDER BY seq DESC LIMIT -1 OFFSET ?",
    ),
    remove: db.prepare("DELETE FROM deploys WHERE seq = ?"),
    refers: db.prepare<[string], { n: number }>("SELECT count(*) AS n FROM deploys WHERE build_id = ?"),
  };
  return {
    add(entry) {
      const seq = q.insert.run(
        entry.environmentId,
        entry.buildId,
        entry.kind,
        entry.keyName,
        entry.at,
        entry.git ? JSON.stringify(entry.git) : null,
        JSON.stringify(entry.changes),
        JSON.stringify(entry.endpoints),
      ).lastInsertRowid;
      return { ...entry, seq: Number(seq) };
    },
    forEnvironment: (environmentId) => q.forEnv.all(environmentId).map(row),
    trim(environmentId, keep) {
      const old = q.old.all(environmentId, keep);
      for (const r of old) q.remove.run(r.seq);
      return old.map((r) => r.build_id);
    },
    refersTo: (buildId) => q.refers.get(buildId)!.n > 0,
  };
}
