/** PutObject, GetObject (with Range), HeadObject, DeleteObject(s) and ListObjects(V2) over a volume's folder. */
import type { IncomingMessage, ServerResponse } from "node:http";
import { mkdir, rm, stat } from "node:fs/promises";
import { pipeline } from "node:stream/promises";
import type { Verified } from "./sigv4.ts";
import { keySegments, placeOf, walk } from "./paths.ts";
import { entryIn, inFolder, moveInto, openObject, pruneEmpty, removeIn } from "./volume-fs.ts";
import { receiveBody } from "./receive-body.ts";
import { freeBytes, objectFacts, stagingFile, tooLarge, type Bucket } from "./bucket.ts";
import { formatChecksum, parseChecksum } from "./checksums.ts";
import { s3Errors } from "./s3-error.ts";
import { httpDate, isoDate, quoted, sendEmpty, sendXml, type Headers } from "./s3-reply.ts";
import { elements, textOf } from "./xml.ts";

const EMPTY_MD5 = "d41d8cd98f00b204e9800998ecf8427e";
const MAX_DELETE_BODY = 2_000_000;

export async function putObject(b: Bucket, key: string, req: IncomingMessage, res: ServerResponse, verified: Verified) {
  const place = (await placeOf(b.root, key, true))!;
  const folder = key.endsWith("/");
  const tmp = stagingFile(b, "put");
  try {
    const existing = await entryIn(place.dir, place.name);
    if (existing?.isDirectory() && !folder) throw s3Errors.invalidKey(`"${key}" is a folder on the volume`);
    const free = await freeBytes(b, existing?.isFile() ? existing.size : 0);
    const got = await receiveBody(req, verified, tmp, { limit: folder ? 0 : free, tooLarge: tooLarge(b, free) });
    if (folder) {
      await mkdir(inFolder(place.dir, place.name)).catch((e: NodeJS.ErrnoException) => (e.code === "EEXIST" ? undefined : Promise.reject(e)));
      sendEmpty(res, 200, { etag: quoted(EMPTY_MD5) });
      return;
    }
    const info = await stat(tmp); // the staged file is the platform's; a rename keeps its mtime
    await moveInto(tmp, place.dir, place.name, tooLarge(b, free));
    b.ctx.store.volumes.putObject(b.volume.id, {
      key,
      size: got.size,
      mtimeMs: Math.trunc(info.mtimeMs),
      etag: got.md5Hex,
      checksum: got.checksum ? formatChecksum(got.checksum.algorithm, got.checksum.value) : null,
      contentType: req.headers["content-type"] ?? null,
    });
    sendEmpty(res, 200, { etag: quoted(got.md5Hex), ...(got.checksum ? { [`x-amz-checksum-${got.checksum.algorithm}`]: got.checksum.value } : {}) });
  } finally {
    await place.close();
    await rm(tmp, { force: true });
  }
}

/** `bytes=a-b`, `bytes=a-`, `bytes=-n` → [start, end] inclusive; undefined when absent; throws InvalidRange. */
function parseRange(header: string | undefined, size: number): [number, number] | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return undefined; // S3 ignores a range it cannot parse
  if (m[1] === "") {
    const n = Number(m[2]);
    if (n === 0 || size === 0) throw s3Errors.invalidRange(size);
    return [Math.max(0, size - n), size - 1];
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) throw s3Errors.invalidRange(size);
  return [start, end];
}

/** The object's open file and facts, or NoSuchKey; a FIFO, socket or device is InvalidObjectState (./volume-fs.ts). */
async function openKey(b: Bucket, key: string) {
  const place = key.endsWith("/") ? undefined : await placeOf(b.root, key, false);
  if (!place) throw s3Errors.noSuchKey(key);
  try {
    const opened = await openObject(place.dir, place.name, key);
    if (!opened) throw s3Errors.noSuchKey(key);
    return opened;
  } finally {
    await place.close();
  }
}

export async function getObject(b: Bucket, key: string, req: IncomingMessage, res: ServerResponse, isHead: boolean) {
  const { file, info } = await openKey(b, key);
  const size = info.size;
  const mtimeMs = Math.trunc(info.mtimeMs);
  let streaming = false;
  try {
    const facts = objectFacts(b, key, size, mtimeMs);
    const range = parseRange(req.headers.range, size);
    const checksum = parseChecksum(facts.checksum);
    const headers: Headers = {
      etag: quoted(facts.etag),
      "last-modified": httpDate(mtimeMs),
      "content-type": facts.contentType ?? "application/octet-stream",
      "accept-ranges": "bytes",
      "content-length": range ? range[1] - range[0] + 1 : size,
    };
    // Whole-object checksums only (a client checks them against what it read); multipart ones are per part.
    if (checksum && !range && String(req.headers["x-amz-checksum-mode"] ?? "").toUpperCase() === "ENABLED" && !checksum.value.includes("-")) {
      headers[`x-amz-checksum-${checksum.algorithm}`] = checksum.value;
    }
    if (range) headers["content-range"] = `bytes ${range[0]}-${range[1]}/${size}`;
    res.statusCode = range ? 206 : 200;
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    if (isHead || size === 0) {
      res.end();
      return;
    }
    streaming = true; // the stream closes the file
    await pipeline(file.createReadStream(range ? { start: range[0], end: range[1] } : {}), res).catch(() => res.destroy());
  } finally {
    if (!streaming) await file.close();
  }
}

/** Deletes the key's file (or empty folder marker) and the folders it leaves empty; a missing key is no error (S3). */
async function removeKey(b: Bucket, key: string) {
  const place = await placeOf(b.root, key, false);
  b.ctx.store.volumes.removeObject(b.volume.id, key);
  if (!place) return;
  try {
    await removeIn(place.dir, place.name, key.endsWith("/"));
    await pruneEmpty(place);
  } finally {
    await place.close();
  }
}

export async function deleteObject(b: Bucket, key: string, res: ServerResponse) {
  await removeKey(b, key);
  sendEmpty(res, 204);
}

export async function deleteObjects(b: Bucket, body: string, res: ServerResponse) {
  if (body.length > MAX_DELETE_BODY) throw s3Errors.malformedXml();
  const keys = elements(body, "Object").map((o) => textOf(o, "Key"));
  if (keys.length === 0 || keys.length > 1000 || keys.some((k) => k === undefined)) throw s3Errors.malformedXml();
  const quiet = textOf(body, "Quiet") === "true";
  const deleted: { Key: string }[] = [];
  const failed: { Key: string; Code: string; Message: string }[] = [];
  for (const key of keys as string[]) {
    try {
      keySegments(key);
      await removeKey(b, key);
      deleted.push({ Key: key });
    } catch (error) {
      const e = error as { code?: string; message?: string };
      failed.push({ Key: key, Code: e.code ?? "InternalError", Message: e.message ?? String(error) });
    }
  }
  sendXml(res, "DeleteResult", { Deleted: quiet ? [] : deleted, Error: failed });
}

const encodeKey = (s: string) => encodeURIComponent(s).replace(/%2F/g, "/");

/** ListObjectsV2 (`list-type=2`) and the older ListObjects (marker), with prefix, delimiter and paging. */
export async function listObjects(b: Bucket, params: URLSearchParams, res: ServerResponse) {
  const v2 = params.get("list-type") === "2";
  const prefix = params.get("prefix") ?? "";
  const delimiter = params.get("delimiter") ?? "";
  const maxKeys = params.has("max-keys") ? Number(params.get("max-keys")) : 1000;
  if (!Number.isInteger(maxKeys) || maxKeys < 0) throw s3Errors.invalidArgument("max-keys must be a non-negative integer.");
  const urlEncoded = params.get("encoding-type") === "url";
  const token = params.get("continuation-token");
  let after = (v2 ? params.get("start-after") : params.get("marker")) ?? "";
  if (token !== null) {
    if (!token) throw s3Errors.invalidArgument("The continuation token provided is incorrect.");
    after = Buffer.from(token, "base64url").toString("utf8");
  }
  // Walk only below the prefix's folder: a folder the prefix names is all the answer can hold.
  const folder = prefix.includes("/") ? prefix.slice(0, prefix.lastIndexOf("/")) : "";
  let valid = true;
  try {
    if (folder) keySegments(folder);
  } catch {
    valid = false;
  }
  const entries = valid ? (await walk(b.root, folder)).filter((e) => e.key.startsWith(prefix)) : [];
  entries.sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));

  const contents: Record<string, string | number>[] = [];
  const prefixes: string[] = [];
  let truncated = false;
  let last = "";
  for (const e of entries) {
    if (after && (e.key <= after || (delimiter && after.endsWith(delimiter) && e.key.startsWith(after)))) continue;
    const cut = delimiter ? e.key.indexOf(delimiter, prefix.length) : -1;
    const common = cut >= 0 ? e.key.slice(0, cut + delimiter.length) : undefined;
    if (common && prefixes[prefixes.length - 1] === common) continue;
    if (contents.length + prefixes.length >= maxKeys) {
      truncated = true;
      break;
    }
    if (common) {
      prefixes.push(common);
      last = common;
      continue;
    }
    const facts = objectFacts(b, e.key, e.size, e.mtimeMs);
    const checksum = parseChecksum(facts.checksum);
    contents.push({
      Key: urlEncoded ? encodeKey(e.key) : e.key,
      LastModified: isoDate(e.mtimeMs),
      ETag: quoted(facts.etag),
      ...(checksum ? { ChecksumAlgorithm: checksum.algorithm.toUpperCase() } : {}),
      Size: e.size,
      StorageClass: "STANDARD",
    });
    last = e.key;
  }
  const enc = (s: string) => (urlEncoded ? encodeKey(s) : s);
  sendXml(res, "ListBucketResult", {
    Name: b.volume.id,
    Prefix: enc(prefix),
    ...(v2
      ? {
          StartAfter: params.has("start-after") ? enc(params.get("start-after")!) : undefined,
          ContinuationToken: token ?? undefined,
          KeyCount: contents.length + prefixes.length,
        }
      : { Marker: enc(params.get("marker") ?? "") }),
    ...(v2 && truncated ? { NextContinuationToken: Buffer.from(last).toString("base64url") } : {}),
    ...(!v2 && truncated && delimiter ? { NextMarker: enc(last) } : {}),
    MaxKeys: maxKeys,
    Delimiter: delimiter ? enc(delimiter) : undefined,
    EncodingType: urlEncoded ? "url" : undefined,
    IsTruncated: truncated,
    Contents: contents,
    CommonPrefixes: prefixes.map((p) => ({ Prefix: enc(p) })),
  });
}
