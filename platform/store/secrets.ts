/** Secrets: a name and its value sealed with AES-256-GCM (../secrets.ts); the store never sees a value in clear. */
import type { Db } from "./db.ts";
import { newId } from "../_ids.ts";

export interface SecretRow {
  id: string;
  name: string;
  createdAt: number;
}
export interface SealedSecret {
  iv: Buffer;
  tag: Buffer;
  ciphertext: Buffer;
}

type RawSecret = { id: string; name: string; created_at: number };

export interface SecretsRepo {
  list(): SecretRow[];
  sealed(name: string): SealedSecret | undefined;
  /** Throws SQLITE_CONSTRAINT_UNIQUE when the name is taken. */
  insert(name: string, sealed: SealedSecret): SecretRow;
  remove(name: string): boolean;
}

export function createSecretsRepo(db: Db): SecretsRepo {
  const q = {
    list: db.prepare<[], RawSecret>("SELECT id, name, created_at FROM secrets ORDER BY name"),
    sealed: db.prepare<[string], { iv: Buffer; tag: Buffer; ciphertext: Buffer }>("SELECT iv, tag, ciphertext FROM secrets WHERE name = ?"),
    insert: db.prepare("INSERT INTO secrets (id, name, iv, tag, ciphertext, created_at) VALUES (?, ?, ?, ?, ?, ?)"),
    remove: db.prepare("DELETE FROM secrets WHERE name = ?"),
  };
  return {
    list: (): SecretRow[] => q.list.all().map((r) => ({ id: r.id, name: r.name, createdAt: r.created_at })),
    sealed: (name: string): SealedSecret | undefined => q.sealed.get(name),
    insert(name: string, sealed: SealedSecret): SecretRow {
      const row = { id: newId("sec"), name, createdAt: Date.now() };
      q.insert.run(row.id, name, sealed.iv, sealed.tag, sealed.ciphertext, row.createdAt);
      return row;
    },
    remove: (name: string): boolean => q.remove.run(name).changes > 0,
  };
}
