/**
 * `svc volume download`: a key or a folder of the volume to a local file or folder, skipping files
 * whose size and ETag already match; each file is written beside its target and renamed in place
 * once whole, and its size checked.
 */
import { createWriteStream } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { Readable } from "node:stream";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import { errors } from "../../core/errors.ts";
import { localEtag } from "./etag.ts";
import { asFolder } from "./volume-path.ts";
import { listAll, type OpenVolume, type RemoteObject } from "./s3.ts";
import type { Progress } from "../../core/progress.ts";

export interface Planned {
  object: RemoteObject;
  target: string;
}

/** What `path` names: one object (to `local`, or `local/<name>` when local is a folder), or a folder's objects under `local/`. */
export async function planDownload(v: OpenVolume, path: string, local: string): Promise<Planned[]> {
  const localInfo = await stat(local).catch(() => undefined);
  if (path && !path.endsWith("/")) {
    const exact = (await listAll(v, path)).objects.find((o) => o.key === path);
    if (exact) return [{ object: exact, target: localInfo?.isDirectory() ? join(local, path.split("/").pop()!) : local }];
  }
  const folder = asFolder(path);
  const { objects } = await listAll(v, folder);
  if (objects.length === 0) throw errors.NOT_FOUND("Path", `${v.volume.name}:${path}`, `\`svc volume ls ${v.volume.name}\` lists what the volume holds.`);
  return objects.map((o) => ({ object: o, target: join(local, ...o.key.slice(folder.length).split("/")) }));
}

export async function downloadFiles(v: OpenVolume, planned: Planned[], progress: Progress): Promise<{ downloaded: number; unchanged: number }> {
  let downloaded = 0;
  let unchanged = 0;
  for (const { object, target } of planned) {
    const info = await stat(target).catch(() => undefined);
    if (info?.isFile() && info.size === object.size && (await localEtag(target, info.size)) === object.etag) {
      progress.skip(object.size);
      unchanged++;
      continue;
    }
    await mkdir(dirname(target), { recursive: true });
    const partial = `${target}.svc-partial`;
    try {
      const out = await v.s3.send(new GetObjectCommand({ Bucket: v.bucket, Key: object.key }));
      const body = out.Body as Readable;
      body.on("data", (chunk: Buffer) => progress.add(chunk.length));
      await pipeline(body, createWriteStream(partial));
      const got = (await stat(partial)).size;
      if (got !== object.size) throw errors.VOLUME_TRANSFER_FAILED(`Downloading ${object.key}`, `got ${got} of ${object.size} bytes`);
      await rename(partial, target);
    } finally {
      await rm(partial, { force: true });
    }
    progress.line(`downloaded ${object.key}`);
    downloaded++;
  }
  return { downloaded, unchanged };
}
