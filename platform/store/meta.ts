/** Key/value settings of the platform (the API key's hash). */
import type { Db } from "./db.ts";

export interface MetaRepo {
  get(key: string): string | undefined;
  set(key: string, value: string): void;
}

export function createMetaRepo(db: Db): MetaRepo {
  const get = db.prepare<[string], { value: string }>("SELECT value FROM meta WHERE key = ?");
  const set = db.prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  return {
    get: (key: string): string | undefined => get.get(key)?.value,
    set: (key: string, value: string): void => void set.run(key, value),
  };
}
