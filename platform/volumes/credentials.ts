/**
 * The platform's one S3 access key pair (docs/volumes.md, "Credentials"): made on first use and kept
 * in the store, separate from the API key (a leaked S3 secret reaches the volumes' bytes, not the
 * API). SigV4 needs the secret itself to check a signature, so it is kept as is, in the state folder
 * only the platform's user can read.
 */
import { randomBytes } from "node:crypto";
import type { Store } from "../store/index.ts";

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

const ID_KEY = "s3_access_key_id";
const SECRET_KEY = "s3_secret_access_key";
const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

export function s3Credentials(store: Store): S3Credentials {
  const accessKeyId = store.meta.get(ID_KEY);
  const secretAccessKey = store.meta.get(SECRET_KEY);
  if (accessKeyId && secretAccessKey) return { accessKeyId, secretAccessKey };
  const made = {
    accessKeyId: `SVC${[...randomBytes(17)].map((b) => UPPER[b % UPPER.length]).join("")}`,
    secretAccessKey: randomBytes(30).toString("base64url"),
  };
  store.meta.set(ID_KEY, made.accessKeyId);
  store.meta.set(SECRET_KEY, made.secretAccessKey);
  return made;
}
