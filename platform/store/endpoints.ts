/** Endpoints (kept in memory too: every queue request looks one up). */
import type { EndpointSettings, EnvVar } from "../../core/client/types.ts";
import type { Db } from "./db.ts";

export type { EnvVar };

/** What the store keeps: the settings the API answers plus the other saveEndpoint fields (svc's client reads none of those). */
export interface EndpointRecord extends EndpointSettings {
  scalerType: "QUEUE_DELAY" | "REQUEST_COUNT";
  locations: string | null;
  networkVolumeId: string | null;
  flashBootType: string | null;
  minCudaVersion: string | null;
  /** ms since the epoch (the API answers ISO text). */
  createdAt: number;
}

export function createEndpointsRepo(db: Db) {
  const q = {
    all: db.prepare<[], { spec: string }>("SELECT spec FROM endpoints ORDER BY created_at"),
    upsert: db.prepare("INSERT INTO endpoints (id, name, spec, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name, spec = excluded.spec"),
    remove: db.prepare("DELETE FROM endpoints WHERE id = ?"),
  };
  const cache = new Map<string, EndpointRecord>();
  for (const row of q.all.all()) {
    const spec = JSON.parse(row.spec) as EndpointRecord;
    cache.set(spec.id, spec);
  }
  return {
    list: (): EndpointRecord[] => [...cache.values()],
    get: (id: string): EndpointRecord | undefined => cache.get(id),
    save(record: EndpointRecord): EndpointRecord {
      q.upsert.run(record.id, record.name, JSON.stringify(record), record.createdAt);
      cache.set(record.id, record);
      return record;
    },
    remove(id: string): boolean {
      cache.delete(id);
      return q.remove.run(id).changes > 0;
    },
  };
}
export type EndpointsRepo = ReturnType<typeof createEndpointsRepo>;
