/** Ids and secrets: random, url- and hostname-safe. */
import { randomBytes, randomFillSync, createHash, hash, timingSafeEqual } from "node:crypto";

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/** `ep_k3j…`: a prefix and 14 random lowercase letters/digits. */
export function newId(prefix: string, length = 14): string {
  const bytes = randomBytes(length);
  let out = `${prefix}_`;
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i]! % ALPHABET.length];
  return out;
}

/**
 * Job ids look like the hosted platform's (a UUID), of version 7: they begin with the time in ms,
 * so a new job lands at the end of the jobs table's id index. Random (v4) ids put each new job on
 * an index page of its own, one more page written per job at every commit (docs/platform.md, "Hot path").
 */
const jobIdBytes = Buffer.alloc(16);
const randomPool = Buffer.alloc(4000); // 400 ids' random bits per refill (one refill costs about as much as one id)
let poolAt = randomPool.length;
export function newJobId(): string {
  if (poolAt === randomPool.length) {
    randomFillSync(randomPool);
    poolAt = 0;
  }
  randomPool.copy(jobIdBytes, 6, poolAt, (poolAt += 10));
  jobIdBytes.writeUIntBE(Date.now(), 0, 6);
  jobIdBytes[6] = (jobIdBytes[6]! & 0x0f) | 0x70; // version 7
  jobIdBytes[8] = (jobIdBytes[8]! & 0x3f) | 0x80; // variant 10
  const hex = jobIdBytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const newSecret = (prefix: string): string => `${prefix}${randomBytes(32).toString("base64url")}`;

export const sha256Hex = (text: string | Buffer): string => createHash("sha256").update(text).digest("hex");

/** Compares a presented secret with a stored sha256 hex digest in constant time. */
export function secretMatches(presented: string | undefined, storedHashHex: string | undefined): boolean {
  if (!presented || !storedHashHex) return false;
  return digestMatches(presented, Buffer.from(storedHashHex, "hex"));
}

/** The stored sha256 hex digest as bytes, decoded once (hot routes compare against it per request). */
export const secretDigest = (storedHashHex: string): Buffer => Buffer.from(storedHashHex, "hex");

/** Compares a presented secret with a precomputed sha256 digest (`secretDigest`) in constant time. */
export function digestMatches(presented: string | undefined, digest: Buffer | undefined): boolean {
  if (!presented || !digest || digest.length !== 32) return false;
  return timingSafeEqual(hash("sha256", presented, "buffer"), digest);
}
