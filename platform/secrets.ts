/**
 * The platform's secrets: values sealed with AES-256-GCM under a key kept in `<state>/secrets.key`
 * (32 random bytes, mode 0600, made on first use), the secret's name bound as associated data (a
 * sealed value cannot be moved to another name). A value is opened only to start a worker whose env
 * references it (`{{ PLATFORM_SECRET_<name> }}`); no route answers it. docs/platform.md, "Secrets".
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { errors } from "../core/errors.ts";
import { SECRET_NAME, secretNamesIn, substituteSecrets } from "../core/secret-refs.ts";
import type { Store } from "./store/index.ts";
import type { SecretRow } from "./store/secrets.ts";

const SECRETS_KEY_FILE = "secrets.key";
/** The largest value accepted (a token or a certificate, not a file). */
export const MAX_SECRET_BYTES = 64 * 1024;

function loadKey(dataDir: string): Buffer {
  const file = join(dataDir, SECRETS_KEY_FILE);
  try {
    const key = readFileSync(file);
    if (key.length === 32) return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const key = randomBytes(32);
  writeFileSync(file, key, { mode: 0o600, flag: "wx" });
  chmodSync(file, 0o600);
  return key;
}

export interface Secrets {
  list(): SecretRow[];
  create(name: string, value: string): SecretRow;
  remove(name: string): boolean;
  /** The env with its secret references replaced; SECRET_MISSING names the first that does not exist. */
  resolve(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
}

export function createSecrets(dataDir: string, store: Store): Secrets {
  let key: Buffer | undefined;
  const theKey = () => (key ??= loadKey(dataDir));

  const open = (name: string): string | undefined => {
    const sealed = store.secrets.sealed(name);
    if (!sealed) return undefined;
    const decipher = createDecipheriv("aes-256-gcm", theKey(), sealed.iv).setAAD(Buffer.from(name)).setAuthTag(sealed.tag);
    return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString("utf8");
  };

  return {
    list: () => store.secrets.list(),
    create(name, value) {
      if (!SECRET_NAME.test(name)) throw errors.SECRET_INVALID(`the name ${JSON.stringify(name)} is not letters, digits, _ and - (at most 64)`);
      if (value.length === 0) throw errors.SECRET_INVALID("the value is empty");
      if (Buffer.byteLength(value) > MAX_SECRET_BYTES) throw errors.SECRET_INVALID(`the value is over ${MAX_SECRET_BYTES / 1024} KiB`);
      if (store.secrets.sealed(name)) throw errors.SECRET_EXISTS(name); // one indexed lookup, not the whole list
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", theKey(), iv).setAAD(Buffer.from(name));
      const ciphertext = Buffer.concat([cipher.update(value, "utf8"), cipher.final()]);
      return store.secrets.insert(name, { iv, tag: cipher.getAuthTag(), ciphertext });
    },
    remove: (name) => store.secrets.remove(name),
    resolve(env) {
      const names = secretNamesIn(Object.values(env).filter((v): v is string => typeof v === "string"));
      if (names.length === 0) return env;
      const values = new Map<string, string>();
      for (const name of names) {
        const value = open(name);
        if (value === undefined) throw errors.SECRET_MISSING([name]);
        values.set(name, value);
      }
      const out: NodeJS.ProcessEnv = {};
      for (const [k, v] of Object.entries(env)) out[k] = typeof v === "string" ? substituteSecrets(v, (name) => values.get(name)!) : v;
      return out;
    },
  };
}
