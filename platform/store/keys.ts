/** Named API keys (../keys/keys.ts): a name, a role, a scope and the scrypt hash of the secret, never the secret. */
import type { Db } from "./db.ts";

export interface KeyRow {
  name: string;
  /** The public part of the secret, to find the row without hashing every key's secret. */
  id: string;
  role: string;
  app: string | null;
  env: string | null;
  salt: Buffer;
  hash: Buffer;
  createdAt: number;
}

type RawKey = Omit<KeyRow, "createdAt"> & { created_at: number };

export interface KeysRepo {
  list(): KeyRow[];
  /** Throws SQLITE_CONSTRAINT_PRIMARYKEY when the name is taken. */
  insert(row: KeyRow): void;
  remove(name: string): boolean;
}

export function createKeysRepo(db: Db): KeysRepo {
  const q = {
    list: db.prepare<[], RawKey>("SELECT * FROM api_keys ORDER BY name"),
    insert: db.prepare("INSERT INTO api_keys (name, id, role, app, env, salt, hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
    remove: db.prepare("DELETE FROM api_keys WHERE name = ?"),
  };
  return {
    list: (): KeyRow[] => q.list.all().map(({ created_at, ...r }) => ({ ...r, createdAt: created_at })),
    insert: (r: KeyRow): void => void q.insert.run(r.name, r.id, r.role, r.app, r.env, r.salt, r.hash, r.createdAt),
    remove: (name: string): boolean => q.remove.run(name).changes > 0,
  };
}
