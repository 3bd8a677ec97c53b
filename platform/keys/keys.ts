/**
 * Named API keys (`svc key create NAME --role R [--app A] [--env E]`): the secret is shown once and
 * stored as its scrypt hash with a salt of its own; a presented secret is hashed the same way and
 * compared in constant time. A secret is `svck_<id>_<random>`: the id finds the key's row without
 * hashing for every key. A verified secret's sha256 is remembered in memory (scrypt costs tens of ms
 * by design), checked again against the row on each call, so a revoked key is refused at its next
 * request. docs/platform.md, "Keys and roles".
 */
import { hash, randomBytes, scryptSync, timingSafeEqual } from "node:crypto";
import { errors } from "../../core/errors.ts";
import type { KeyRow, Store } from "../store/index.ts";
import { newId } from "../_ids.ts";
import type { Identity } from "./access.ts";
import { ROLES, type Role } from "./rules.ts";

const PREFIX = "svck_";
const ID_LENGTH = 12;
/**
 * scrypt's cost (N = 2^12, r 8, p 1: 4 MiB) and output length. A secret is 256 random bits, so no
 * guessing is helped by a cheaper hash; the hash keeps a copied database from holding usable keys.
 * Node's default N (2^14) cost 245 ms per hash here against 51 ms (2-core machine under load 23,
 * 10 hashes each), all of it blocking the event loop at a key's first request.
 */
const SCRYPT = { N: 4096, r: 8, p: 1 } as const;
const HASH_BYTES = 32;
const NAME = /^[a-z0-9][a-z0-9_.-]{0,62}$/i;

export interface KeyView {
  name: string;
  role: Role;
  app: string | null;
  env: string | null;
  createdAt: number;
}

export interface Keys {
  /** The new key and its secret (shown once: only its hash is kept). */
  create(input: { name: string; role: string; app?: string | null; env?: string | null }): { key: KeyView; secret: string };
  list(): KeyView[];
  revoke(name: string): boolean;
  /** The holder of a named key's secret; undefined for anything else. */
  verify(secret: string | undefined): Identity | undefined;
}

const view = (r: KeyRow): KeyView => ({ name: r.name, role: r.role as Role, app: r.app, env: r.env, createdAt: r.createdAt });
const identity = (r: KeyRow): Identity => ({ name: r.name, role: r.role as Role, ...(r.app ? { app: r.app } : {}), ...(r.env ? { env: r.env } : {}) });
const digest = (secret: string) => hash("sha256", secret, "buffer");

export function createKeys(store: Store): Keys {
  const byId = new Map(store.keys.list().map((r) => [r.id, r]));
  const verified = new Map<string, Buffer>(); // key id -> sha256 of the secret that matched its hash

  return {
    create({ name, role, app, env }) {
      if (!NAME.test(name) || name === "platform")
        throw errors.BAD_REQUEST(`A key's name is 1-63 letters, digits, '.', '_' or '-' (and not "platform"), got "${name}".`);
      if (!(ROLES as readonly string[]).includes(role)) throw errors.BAD_REQUEST(`A key's role is one of ${ROLES.join(", ")}, got "${role}".`);
      if (env && !app) throw errors.BAD_REQUEST("A key scoped to an environment names its app too (--app).");
      if (role === "admin" && app) throw errors.BAD_REQUEST("An admin key is platform-wide: leave out --app and --env.");
      if (store.keys.list().some((r) => r.name === name)) throw errors.BAD_REQUEST(`A key named "${name}" exists: revoke it first or pick another name.`);
      const id = newId("k", ID_LENGTH).slice(2);
      const secret = `${PREFIX}${id}_${randomBytes(32).toString("base64url")}`;
      const salt = randomBytes(16);
      const row: KeyRow = {
        name,
        id,
        role,
        app: app || null,
        env: env || null,
        salt,
        hash: scryptSync(secret, salt, HASH_BYTES, SCRYPT),
        createdAt: Date.now(),
      };
      store.keys.insert(row);
      byId.set(id, row);
      return { key: view(row), secret };
    },
    list: () => store.keys.list().map(view),
    revoke(name) {
      const row = [...byId.values()].find((r) => r.name === name);
      if (!row) return false;
      byId.delete(row.id);
      verified.delete(row.id);
      return store.keys.remove(name);
    },
    verify(secret) {
      if (!secret?.startsWith(PREFIX) || secret[PREFIX.length + ID_LENGTH] !== "_") return undefined;
      const id = secret.slice(PREFIX.length, PREFIX.length + ID_LENGTH);
      const row = byId.get(id);
      if (!row) return undefined;
      const seen = verified.get(id);
      if (seen && timingSafeEqual(seen, digest(secret))) return identity(row);
      const presented = scryptSync(secret, row.salt, HASH_BYTES, SCRYPT);
      if (!timingSafeEqual(presented, row.hash)) return undefined;
      verified.set(id, digest(secret));
      return identity(row);
    },
  };
}
