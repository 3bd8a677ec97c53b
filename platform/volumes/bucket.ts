/** One request's view of a volume as an S3 bucket: its folder, its free bytes, its stored object facts. */
import { createHash, randomBytes } from "node:crypto";
import { readdir, stat, statfs } from "node:fs/promises";
import { join } from "node:path";
import type { ResolvedOptions } from "../options.ts";
import type { ObjectRecord, Store, VolumeRecord } from "../store/index.ts";
import { stagingDir, uploadDir, usedBytes, volumeDir } from "./paths.ts";
import { s3Errors } from "./s3-error.ts";

/** A volume's size is in decimal GB, as the hosted platform counts them. */
export const GB = 1_000_000_000;

/** What the S3 API reads of the platform: the store, the state folder and the log. */
export interface VolumesContext {
  store: Store;
  options: Pick<ResolvedOptions, "dataDir" | "log">;
}

export interface Bucket {
  ctx: VolumesContext;
  volume: VolumeRecord;
  root: string;
}

export const bucketOf = (ctx: VolumesContext, volume: VolumeRecord): Bucket => ({ ctx, volume, root: volumeDir(ctx.options.dataDir, volume.id) });

/** A fresh file name in the staging folder (same file system as the volumes: a rename moves it in). */
export const stagingFile = (b: Bucket, what: string) => join(stagingDir(b.ctx.options.dataDir), `${what}-${randomBytes(8).toString("hex")}`);

/** Bytes of the parts of this volume's unfinished multipart uploads. */
async function stagedBytes(b: Bucket): Promise<number> {
  let total = 0;
  for (const u of b.ctx.store.volumes.uploads(b.volume.id)) {
    const dir = uploadDir(b.ctx.options.dataDir, u.id);
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      if (/^\d+$/.test(name)) total += (await stat(join(dir, name)).catch(() => ({ size: 0 }))).size;
    }
  }
  return total;
}

/** Bytes a write may still add, counting `replacing` (the object or part it overwrites) as freed. */
export async function freeBytes(b: Bucket, replacing = 0): Promise<number> {
  const byRecord = b.volume.sizeGb * GB - (await usedBytes(b.root)) - (await stagedBytes(b));
  // The file system's own free space too: a volume's image (./volume-disk.ts) a worker filled, or the host's disk.
  const fs = await statfs(b.root).catch(() => undefined);
  return Math.max(0, Math.min(byRecord, fs ? fs.bavail * fs.bsize : Infinity) + replacing);
}

export const tooLarge = (b: Bucket, free: number) => () => s3Errors.entityTooLarge(b.volume.name, b.volume.sizeGb, free);

/**
 * What the S3 API recorded of a file, if it is still that file (same size and mtime); else an ETag
 * derived from its size and mtime (a file a worker wrote or changed: docs/volumes.md, "ETags").
 */
export function objectFacts(b: Bucket, key: string, size: number, mtimeMs: number): ObjectRecord {
  const row = b.ctx.store.volumes.object(b.volume.id, key);
  if (row && row.size === size && row.mtimeMs === mtimeMs) return row;
  return { key, size, mtimeMs, etag: createHash("md5").update(`${size}:${mtimeMs}`).digest("hex"), checksum: null, contentType: null };
}
