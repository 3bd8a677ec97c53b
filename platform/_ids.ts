/** Ids and secrets: random, url- and hostname-safe. */
import { randomBytes, randomUUID, createHash, hash, timingSafeEqual } from "node:crypto";

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/** `ep_k3j…`: a prefix and 14 random lowercase letters/digits. */
export function newId(prefix: string, length = 14): string {
  const bytes = randomBytes(length);
  let out = `${prefix}_`;
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i]! % ALPHABET.length];
  return out;
}

/** Job ids look like the hosted platform's (a UUID). */
export const newJobId = (): string => randomUUID();

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
