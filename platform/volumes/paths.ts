/**
 * Where a volume's bytes live (`<state>/volumes/<id>/`) and how an S3 key maps into that folder:
 * keys with `..`, `.` or empty segments are refused, and every folder on the way must resolve
 * inside the volume (a symlink a worker made cannot lead a write or a read outside it).
 */
import { lstat, mkdir, readdir, realpath, stat } from "node:fs/promises";
import { join, sep } from "node:path";
import { s3Errors } from "./s3-error.ts";

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

const inside = (root: string, path: string) => path === root || path.startsWith(root + sep);

/**
 * The file path of `key` in the volume at `root`, after checking that its folders resolve inside
 * the volume; `create` makes the missing folders (one at a time, each checked).
 */
export async function resolveKey(root: string, key: string, create: boolean): Promise<{ path: string; folder: boolean }> {
  const segments = keySegments(key);
  const realRoot = await realpath(root);
  let dir = root;
  for (const segment of segments.slice(0, -1)) {
    dir = join(dir, segment);
    const info = await lstat(dir).catch(() => undefined);
    if (!info) {
      if (!create) break;
      await mkdir(dir);
      continue;
    }
    if (info.isSymbolicLink() && !inside(realRoot, await realpath(dir).catch(() => ""))) throw s3Errors.accessDenied(`"${key}" leads outside the volume (a symbolic link).`);
    if (!info.isDirectory() && !info.isSymbolicLink()) throw s3Errors.invalidKey(`"${segment}" on the way to "${key}" is a file`);
  }
  return { path: join(root, ...segments), folder: key.endsWith("/") };
}

/** The file behind a key for reading: a regular file inside the volume, or undefined. */
export async function existingFile(root: string, key: string): Promise<{ path: string; size: number; mtimeMs: number } | undefined> {
  const { path, folder } = await resolveKey(root, key, false);
  if (folder) return undefined;
  const real = await realpath(path).catch(() => undefined);
  if (!real || !inside(await realpath(root), real)) return undefined;
  const info = await stat(real);
  return info.isFile() ? { path: real, size: info.size, mtimeMs: Math.trunc(info.mtimeMs) } : undefined;
}

export interface Entry { key: string; size: number; mtimeMs: number }

/** Every regular file under `root/<start>` as S3 keys (symlinks not followed), unsorted. */
export async function walk(root: string, start = ""): Promise<Entry[]> {
  const out: Entry[] = [];
  const visit = async (rel: string) => {
    const entries = await readdir(join(root, rel), { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const key = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await visit(key);
      else if (e.isFile()) {
        const info = await lstat(join(root, key)).catch(() => undefined);
        if (info) out.push({ key, size: info.size, mtimeMs: Math.trunc(info.mtimeMs) });
      }
    }
  };
  await visit(start);
  return out;
}

/** Bytes the volume holds (its files; symlinks count as nothing). */
export async function usedBytes(root: string): Promise<number> {
  let total = 0;
  for (const e of await walk(root)) total += e.size;
  return total;
}
