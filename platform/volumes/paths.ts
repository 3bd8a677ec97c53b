/**
 * Where a volume's bytes live (`<state>/volumes/<id>/`) and how an S3 key maps into that folder:
 * keys with `..`, `.` or empty segments are refused, and a key is reached one folder fd at a time
 * without following links (./volume-fs.ts), whatever a worker does to its folders meanwhile.
 */
import { join } from "node:path";
import { s3Errors } from "./s3-error.ts";
import { openPlace, openRoot, walkFolder, type Entry, type KeyPlace } from "./volume-fs.ts";

export type { Entry } from "./volume-fs.ts";

export const volumeDir = (dataDir: string, id: string) => join(dataDir, "volumes", id);
/** Multipart parts and half-received objects: outside every volume, so workers never see them. */
export const stagingDir = (dataDir: string) => join(dataDir, "volume-staging");
export const uploadDir = (dataDir: string, uploadId: string) => join(dataDir, "volume-staging", uploadId);

const MAX_KEY_BYTES = 1024;

/** A key's segments; throws InvalidArgument for what cannot be a path inside the volume. */
export function keySegments(key: string): string[] {
  if (key === "") throw s3Errors.invalidKey("it is empty");
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) throw s3Errors.invalidKey(`it is over ${MAX_KEY_BYTES} bytes`);
  if (key.includes("\0")) throw s3Errors.invalidKey("it holds a NUL byte");
  const segments = key.split("/");
  if (segments[segments.length - 1] === "") segments.pop(); // `folder/`: a folder marker
  for (const s of segments) {
    if (s === "" || s === "." || s === "..") throw s3Errors.invalidKey(`"${key}" has an empty, "." or ".." segment`);
  }
  return segments;
}

/** The key's place in the volume at `root` (./volume-fs.ts: no link followed); undefined when a folder on the way is missing. */
export const placeOf = (root: string, key: string, create: boolean): Promise<KeyPlace | undefined> => openPlace(root, keySegments(key), key, create);

/** Every regular file under `root/<start>` as S3 keys (no link followed), unsorted; none when `start` is not a folder. */
export async function walk(root: string, start = ""): Promise<Entry[]> {
  if (!start) {
    const dir = await openRoot(root);
    try {
      return await walkFolder(dir, "");
    } finally {
      await dir.close();
    }
  }
  const place = await openPlace(root, [...keySegments(start), "(none)"], start, false).catch(() => undefined); // every segment a folder
  if (!place) return [];
  try {
    return await walkFolder(place.dir, start);
  } finally {
    await place.close();
  }
}

/** Bytes the volume holds (its files; symlinks count as nothing). */
export async function usedBytes(root: string): Promise<number> {
  let total = 0;
  for (const e of await walk(root)) total += e.size;
  return total;
}
