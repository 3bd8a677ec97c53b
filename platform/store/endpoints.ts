/**
 * Endpoints (kept in memory too: every queue request looks one up), and the settings a deploy
 * stages for an environment's next build: they take effect together with the build switch, in
 * one transaction (docs/platform.md, "Deploys switch in one step").
 */
import type { EndpointSettings, EnvVar } from "../../core/client/types.ts";
import type { Schedule } from "../../core/endpoint-schema.ts";
import type { Db } from "./db.ts";

export type { EnvVar };

/** What the store keeps: the settings the API answers plus the other saveEndpoint fields (svc's client reads none of those). */
export interface EndpointRecord extends EndpointSettings {
  scalerType: "QUEUE_DELAY" | "REQUEST_COUNT";
  locations: string | null;
  networkVolumeId: string | null;
  flashBootType: string | null;
  minCudaVersion: string | null;
  /** `schedule=`: the platform queues a job at each time it names (../queue/scheduler.ts). */
  schedule?: Schedule | null;
  /** ms since the epoch (the API answers ISO text). */
  createdAt: number;
}

export interface EndpointsRepo {
  list(): EndpointRecord[];
  get(id: string): EndpointRecord | undefined;
  save(record: EndpointRecord): EndpointRecord;
  remove(id: string): boolean;
  /** Settings for `buildId` in the environment: nothing runs them until the switch to that build. */
  stage(environmentId: string, buildId: string, record: EndpointRecord): void;
  staged(environmentId: string, buildId: string): EndpointRecord[];
  /**
   * The environment's one committed step: `buildId` becomes its active build, the settings staged
   * for it replace the live ones, `retire` (endpoints the build does not have) are deleted, and
   * whatever else was staged in the environment is dropped.
   */
  switchBuild(environmentId: string, buildId: string, apply: EndpointRecord[], retire: string[]): void;
}

export function createEndpointsRepo(db: Db): EndpointsRepo {
  const q = {
    all: db.prepare<[], { spec: string }>("SELECT spec FROM endpoints ORDER BY created_at"),
    upsert: db.prepare(
      "INSERT INTO endpoints (id, name, spec, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name, spec = excluded.spec",
    ),
    remove: db.prepare("DELETE FROM endpoints WHERE id = ?"),
    stage: db.prepare(
      "INSERT INTO staged_endpoints (environment_id, endpoint_id, build_id, spec) VALUES (?, ?, ?, ?) ON CONFLICT (environment_id, endpoint_id) DO UPDATE SET build_id = excluded.build_id, spec = excluded.spec",
    ),
    staged: db.prepare<[string, string], { spec: string }>("SELECT spec FROM staged_endpoints WHERE environment_id = ? AND build_id = ?"),
    clearStaged: db.prepare("DELETE FROM staged_endpoints WHERE environment_id = ?"),
    setActiveBuild: db.prepare("UPDATE environments SET active_build_id = ? WHERE id = ?"),
  };
  const cache = new Map<string, EndpointRecord>();
  for (const row of q.all.all()) {
    const spec = JSON.parse(row.spec) as EndpointRecord;
    cache.set(spec.id, spec);
  }
  const write = (record: EndpointRecord) => q.upsert.run(record.id, record.name, JSON.stringify(record), record.createdAt);

  /** The switch's statements: committed together or not at all. */
  const switchTx = db.transaction((environmentId: string, buildId: string, apply: EndpointRecord[], retire: string[]) => {
    q.setActiveBuild.run(buildId, environmentId);
    for (const record of apply) write(record);
    for (const id of retire) q.remove.run(id);
    q.clearStaged.run(environmentId); // settings staged for any other build are dropped: that deploy never switched
  });

  return {
    list: (): EndpointRecord[] => [...cache.values()],
    get: (id: string): EndpointRecord | undefined => cache.get(id),
    save(record: EndpointRecord): EndpointRecord {
      write(record);
      cache.set(record.id, record);
      return record;
    },
    remove(id: string): boolean {
      cache.delete(id);
      return q.remove.run(id).changes > 0;
    },
    stage(environmentId: string, buildId: string, record: EndpointRecord): void {
      void q.stage.run(environmentId, record.id, buildId, JSON.stringify(record));
    },
    staged: (environmentId: string, buildId: string): EndpointRecord[] =>
      q.staged.all(environmentId, buildId).map((row) => JSON.parse(row.spec) as EndpointRecord),
    switchBuild(environmentId: string, buildId: string, apply: EndpointRecord[], retire: string[]): void {
      switchTx(environmentId, buildId, apply, retire);
      for (const record of apply) cache.set(record.id, record);
      for (const id of retire) cache.delete(id);
    },
  };
}
