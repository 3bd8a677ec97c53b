/**
 * The ETag S3 gives a file uploaded the way `svc volume upload` uploads it: the MD5 of a file of one
 * part, else `<md5 of the parts' md5s>-<parts>`. The part size depends only on the file's size, so a
 * local file's ETag can be computed and compared with the volume's without downloading anything.
 */
import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import { multipartEtag } from "../../core/multipart-etag.ts";

const MiB = 1024 * 1024;
/** S3 allows 10,000 parts; 8 MiB parts up to 80 GB files, larger parts above. */
const MIN_PART = 8 * MiB;
const MAX_PARTS = 10_000;

export function partSize(size: number): number {
  return Math.max(MIN_PART, Math.ceil(size / MAX_PARTS / MiB) * MiB);
}

export const partCount = (size: number) => Math.max(1, Math.ceil(size / partSize(size)));

/** One file goes as a single PutObject up to one part's size. */
export const isMultipart = (size: number) => size > partSize(size);

/** Reads part `n` (1-based) of the file. */
export async function readPart(handle: import("node:fs/promises").FileHandle, size: number, n: number): Promise<Buffer> {
  const ps = partSize(size);
  const start = (n - 1) * ps;
  const length = Math.min(ps, size - start);
  const buf = Buffer.allocUnsafe(length);
  let at = 0;
  while (at < length) {
    const { bytesRead } = await handle.read(buf, at, length - at, start + at);
    if (bytesRead === 0) throw new Error(`the file shrank while it was read (part ${n})`);
    at += bytesRead;
  }
  return buf;
}

export const md5 = (data: Buffer) => createHash("md5").update(data).digest();

/** The ETag the file has once uploaded by svc. */
export async function localEtag(path: string, size: number): Promise<string> {
  const handle = await open(path, "r");
  try {
    if (!isMultipart(size)) return md5(await readPart(handle, Math.max(size, 0), 1)).toString("hex");
    const md5s: Buffer[] = [];
    for (let n = 1; n <= partCount(size); n++) md5s.push(md5(await readPart(handle, size, n)));
    return multipartEtag(md5s);
  } finally {
    await handle.close();
  }
}
