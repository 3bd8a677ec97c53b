/** Endpoints (kept in memory too: every queue request looks one up). */
import type { Db } from "./db.ts";

export interface EnvVar { key: string; value: string }

export interface EndpointRecord {
  id: string;
  name: string;
  type: "QB" | "LB";
  gpuIds: string | null;
  gpuCount: number | null;
  instanceIds: string[] | null;
  workersMin: number;
  workersMax: number;
  idleTimeout: number;
  scalerType: "QUEUE_DELAY" | "REQUEST_COUNT";
  scalerValue: number;
  executionTimeoutMs: number;
  templateId: string | null;
  imageName: string | null;
  env: EnvVar[];
  environmentId: string | null;
  buildId: string | null;
  locations: string | null;
  networkVolumeId: string | null;
  flashBootType: string | null;
  minCudaVersion: string | null;
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
