/** Output files handed over by workers (contracts section 6). */
import type { Db } from "./db.ts";

export interface FileRecord {
  id: string;
  name: string;
  contentType: string;
  size: number;
  path: string;
  endpointId: string | null;
  createdAt: number;
  expiresAt: number;
}
type Raw = { id: string; name: string; content_type: string; size: number; path: string; endpoint_id: string | null; created_at: number; expires_at: number };
const file = (r: Raw): FileRecord => ({
  id: r.id,
  name: r.name,
  contentType: r.content_type,
  size: r.size,
  path: r.path,
  endpointId: r.endpoint_id,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

export interface FilesRepo {
  add(f: FileRecord): void;
  get(id: string): FileRecord | undefined;
  expired(now: number): FileRecord[];
  remove(id: string): void;
}

export function createFilesRepo(db: Db): FilesRepo {
  const q = {
    insert: db.prepare("INSERT INTO files (id, name, content_type, size, path, endpoint_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
    byId: db.prepare<[string], Raw>("SELECT * FROM files WHERE id = ?"),
    expired: db.prepare<[number], Raw>("SELECT * FROM files WHERE expires_at <= ? LIMIT 1000"),
    remove: db.prepare("DELETE FROM files WHERE id = ?"),
  };
  return {
    add: (f: FileRecord): void => void q.insert.run(f.id, f.name, f.contentType, f.size, f.path, f.endpointId, f.createdAt, f.expiresAt),
    get: (id: string): FileRecord | undefined => {
      const r = q.byId.get(id);
      return r && file(r);
    },
    expired: (now: number): FileRecord[] => q.expired.all(now).map(file),
    remove: (id: string): void => void q.remove.run(id),
  };
}
