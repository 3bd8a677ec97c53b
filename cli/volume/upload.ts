/**
 * `svc volume upload`: files and folders into a volume like `aws s3 sync` (a file whose size and
 * ETag already match is not sent), over the S3 API with the AWS SDK v3. A large file goes in parts
 * and resumes: an unfinished upload of the same key is found with ListMultipartUploads, its parts
 * with ListParts, and a part whose size and MD5 match what is there is not sent again. Every part
 * carries a CRC32 (the SDK's) and a Content-MD5, and the finished object's ETag must equal the one
 * computed from the local file (docs/volumes.md, "Resumable uploads").
 */
import { open, readdir, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
} from "@aws-sdk/client-s3";
import { errors } from "../../core/errors.ts";
import { multipartEtag } from "../../core/multipart-etag.ts";
import { isMultipart, localEtag, md5, partCount, readPart } from "./etag.ts";
import { listAll, type OpenVolume } from "./s3.ts";
import type { Progress } from "../../core/progress.ts";

/** Parts in flight at once per file. */
const CONCURRENCY = 4;

export interface LocalFile {
  path: string;
  key: string;
  size: number;
}

/** The files to upload: one file to `<path>` (or `<path>/<name>` when path names a folder), a folder's files under `<path>/`. */
export async function localFiles(local: string, path: string): Promise<LocalFile[]> {
  const info = await stat(local).catch(() => undefined);
  if (!info) throw errors.CLI_USAGE(`No such file or folder: ${local}`, "volume");
  if (info.isFile()) {
    const name = local.split(sep).pop()!;
    const key = path === "" || path.endsWith("/") ? `${path}${name}` : path;
    return [{ path: local, key, size: info.size }];
  }
  const out: LocalFile[] = [];
  const prefix = path === "" || path.endsWith("/") ? path : `${path}/`;
  const visit = async (dir: string) => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const full = join(dir, e.name);
      if (e.isDirectory()) await visit(full);
      else if (e.isFile()) out.push({ path: full, key: `${prefix}${relative(local, full).split(sep).join("/")}`, size: (await stat(full)).size });
    }
  };
  await visit(local);
  return out.sort((a, b) => (a.key < b.key ? -1 : 1));
}

export interface FileResult {
  key: string;
  size: number;
  action: "unchanged" | "uploaded" | "resumed";
  sentBytes: number;
  reusedBytes: number;
}

async function putWhole(v: OpenVolume, file: LocalFile, progress: Progress): Promise<FileResult> {
  const handle = await open(file.path, "r");
  try {
    const body = await readPart(handle, file.size, 1);
    const digest = md5(body);
    const out = await v.s3.send(
      new PutObjectCommand({ Bucket: v.bucket, Key: file.key, Body: body, ContentMD5: digest.toString("base64"), ChecksumAlgorithm: "CRC32" }),
    );
    if (out.ETag?.replace(/"/g, "") !== digest.toString("hex"))
      throw errors.VOLUME_TRANSFER_FAILED(`Uploading ${file.key}`, "the volume's ETag does not match the file's MD5");
    progress.add(file.size);
    return { key: file.key, size: file.size, action: "uploaded", sentBytes: file.size, reusedBytes: 0 };
  } finally {
    await handle.close();
  }
}

interface RemotePart {
  etag: string;
  size: number;
  checksum?: string;
}

/** The newest unfinished upload of this key and its parts, if any. */
async function unfinishedUpload(v: OpenVolume, key: string): Promise<{ uploadId: string; parts: Map<number, RemotePart> } | undefined> {
  const listed = await v.s3.send(new ListMultipartUploadsCommand({ Bucket: v.bucket, Prefix: key }));
  const mine = (listed.Uploads ?? []).filter((u) => u.Key === key).sort((a, b) => (b.Initiated?.getTime() ?? 0) - (a.Initiated?.getTime() ?? 0));
  const newest = mine[0];
  if (!newest?.UploadId) return undefined;
  const parts = new Map<number, RemotePart>();
  let marker: string | undefined;
  do {
    const page = await v.s3.send(new ListPartsCommand({ Bucket: v.bucket, Key: key, UploadId: newest.UploadId, PartNumberMarker: marker }));
    for (const p of page.Parts ?? []) parts.set(p.PartNumber!, { etag: (p.ETag ?? "").replace(/"/g, ""), size: p.Size ?? 0, checksum: p.ChecksumCRC32 });
    marker = page.IsTruncated ? page.NextPartNumberMarker : undefined;
  } while (marker);
  return { uploadId: newest.UploadId, parts };
}

async function putInParts(v: OpenVolume, file: LocalFile, progress: Progress, signal?: AbortSignal): Promise<FileResult> {
  const found = await unfinishedUpload(v, file.key);
  const uploadId =
    found?.uploadId ?? (await v.s3.send(new CreateMultipartUploadCommand({ Bucket: v.bucket, Key: file.key, ChecksumAlgorithm: "CRC32" }))).UploadId!;
  const count = partCount(file.size);
  const md5s: Buffer[] = new Array(count);
  const completed: CompletedPart[] = new Array(count);
  let sentBytes = 0;
  let reusedBytes = 0;
  const handle = await open(file.path, "r");
  try {
    let next = 1;
    const worker = async () => {
      while (next <= count) {
        signal?.throwIfAborted();
        const n = next++;
        const body = await readPart(handle, file.size, n);
        const digest = md5(body);
        md5s[n - 1] = digest;
        const there = found?.parts.get(n);
        if (there && there.size === body.length && there.etag === digest.toString("hex")) {
          completed[n - 1] = { PartNumber: n, ETag: `"${there.etag}"`, ChecksumCRC32: there.checksum };
          reusedBytes += body.length;
          progress.skip(body.length);
          continue;
        }
        const out = await v.s3.send(
          new UploadPartCommand({
            Bucket: v.bucket,
            Key: file.key,
            UploadId: uploadId,
            PartNumber: n,
            Body: body,
            ContentMD5: digest.toString("base64"),
            ChecksumAlgorithm: "CRC32",
          }),
          { abortSignal: signal },
        );
        if (out.ETag?.replace(/"/g, "") !== digest.toString("hex"))
          throw errors.VOLUME_TRANSFER_FAILED(`Uploading part ${n} of ${file.key}`, "the volume's ETag does not match the part's MD5");
        completed[n - 1] = { PartNumber: n, ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32 };
        sentBytes += body.length;
        progress.add(body.length);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, count) }, worker));
  } finally {
    await handle.close();
  }
  const expected = multipartEtag(md5s);
  const done = await v.s3.send(
    new CompleteMultipartUploadCommand({ Bucket: v.bucket, Key: file.key, UploadId: uploadId, MultipartUpload: { Parts: completed } }),
  );
  const head = await v.s3.send(new HeadObjectCommand({ Bucket: v.bucket, Key: file.key }));
  if (done.ETag?.replace(/"/g, "") !== expected || head.ContentLength !== file.size) {
    throw errors.VOLUME_TRANSFER_FAILED(
      `Uploading ${file.key}`,
      `the volume holds ${head.ContentLength} bytes with ETag ${done.ETag}, the file ${file.size} bytes with ETag "${expected}"`,
    );
  }
  return { key: file.key, size: file.size, action: found ? "resumed" : "uploaded", sentBytes, reusedBytes };
}

/** Uploads what changed; answers per file what happened. An interrupted upload stays on the volume to resume. */
export async function uploadFiles(v: OpenVolume, files: LocalFile[], prefix: string, progress: Progress, signal?: AbortSignal): Promise<FileResult[]> {
  const remote = new Map((await listAll(v, prefix)).objects.map((o) => [o.key, o]));
  const results: FileResult[] = [];
  for (const file of files) {
    signal?.throwIfAborted();
    const there = remote.get(file.key);
    if (there && there.size === file.size && there.etag === (await localEtag(file.path, file.size))) {
      progress.skip(file.size);
      results.push({ key: file.key, size: file.size, action: "unchanged", sentBytes: 0, reusedBytes: file.size });
      continue;
    }
    const result = isMultipart(file.size) ? await putInParts(v, file, progress, signal) : await putWhole(v, file, progress);
    progress.line(
      `${result.action === "resumed" ? "resumed" : "uploaded"} ${file.key} (${result.sentBytes} bytes sent${result.reusedBytes ? `, ${result.reusedBytes} already there` : ""})`,
    );
    results.push(result);
  }
  return results;
}

/** Drops unfinished uploads of a key (`svc volume rm` of a key mid-upload). */
export async function abortUnfinished(v: OpenVolume, key: string): Promise<number> {
  const listed = await v.s3.send(new ListMultipartUploadsCommand({ Bucket: v.bucket, Prefix: key }));
  let n = 0;
  for (const u of listed.Uploads ?? []) {
    if (u.Key !== key) continue;
    await v.s3.send(new AbortMultipartUploadCommand({ Bucket: v.bucket, Key: key, UploadId: u.UploadId }));
    n++;
  }
  return n;
}
