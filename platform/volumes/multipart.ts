/**
 * Multipart uploads: create, upload part, list parts, complete, abort, list uploads. Parts wait in
 * `<state>/volume-staging/<uploadId>/` (`<n>` and its facts in `<n>.json`) and count against the
 * volume's size; complete joins them into the volume in one rename. ListParts is what lets a client
 * resume: it re-sends only the parts missing (docs/volumes.md, "Resumable uploads").
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { multipartEtag } from "../../core/multipart-etag.ts";
import { newId } from "../_ids.ts";
import type { UploadRecord } from "../store/index.ts";
import type { Verified } from "./sigv4.ts";
import { keySegments, placeOf, uploadDir } from "./paths.ts";
import { entryIn, inFolder, moveInto } from "./volume-fs.ts";
import { receiveBody } from "./receive-body.ts";
import { freeBytes, stagingFile, tooLarge, type Bucket } from "./bucket.ts";
import { checksumElement, compositeChecksum, formatChecksum, isChecksumAlgorithm, parseChecksum, type ChecksumAlgorithm } from "./checksums.ts";
import { s3Errors } from "./s3-error.ts";
import { isoDate, quoted, sendEmpty, sendXml } from "./s3-reply.ts";
import { elements, textOf } from "./xml.ts";

const MIN_PART_BYTES = 5 * 1024 * 1024;
const MAX_PARTS = 10_000;

interface PartFacts {
  etag: string;
  size: number;
  checksum?: string;
  at: number;
}

function mustUpload(b: Bucket, key: string, uploadId: string): UploadRecord {
  const upload = b.ctx.store.volumes.upload(uploadId);
  if (!upload || upload.volumeId !== b.volume.id || upload.key !== key) throw s3Errors.noSuchUpload(uploadId);
  return upload;
}

const algorithmOf = (u: UploadRecord): ChecksumAlgorithm | null =>
  u.checksumAlgorithm && isChecksumAlgorithm(u.checksumAlgorithm) ? u.checksumAlgorithm : null;

/** The parts received so far, by number (a part whose facts do not match its bytes is left out). */
async function partsOf(b: Bucket, uploadId: string): Promise<Map<number, PartFacts>> {
  const dir = uploadDir(b.ctx.options.dataDir, uploadId);
  const parts = new Map<number, PartFacts>();
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const facts = await readFile(join(dir, `${name}.json`), "utf8")
      .then((t) => JSON.parse(t) as PartFacts)
      .catch(() => undefined);
    const size = (await stat(join(dir, name)).catch(() => undefined))?.size;
    if (facts && facts.size === size) parts.set(Number(name), facts);
  }
  return parts;
}

export async function createUpload(b: Bucket, key: string, req: IncomingMessage, res: ServerResponse) {
  keySegments(key);
  if (key.endsWith("/")) throw s3Errors.invalidKey("a folder marker cannot be uploaded in parts");
  const named = String(req.headers["x-amz-checksum-algorithm"] ?? "").toLowerCase();
  if (named && !isChecksumAlgorithm(named)) throw s3Errors.invalidArgument(`Unknown x-amz-checksum-algorithm "${named}".`);
  const upload = b.ctx.store.volumes.createUpload({
    id: newId("mpu", 24),
    volumeId: b.volume.id,
    key,
    checksumAlgorithm: named || null,
    contentType: (req.headers["content-type"] as string | undefined) ?? null,
    createdAt: Date.now(),
  });
  await mkdir(uploadDir(b.ctx.options.dataDir, upload.id), { recursive: true });
  req.resume();
  sendXml(
    res,
    "InitiateMultipartUploadResult",
    { Bucket: b.volume.id, Key: key, UploadId: upload.id },
    named ? { "x-amz-checksum-algorithm": named.toUpperCase() } : {},
  );
}

const partNumberOf = (raw: string | null) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_PARTS) throw s3Errors.invalidArgument(`Part number must be an integer between 1 and ${MAX_PARTS}, inclusive.`);
  return n;
};

export async function uploadPart(b: Bucket, key: string, params: URLSearchParams, req: IncomingMessage, res: ServerResponse, verified: Verified) {
  const upload = mustUpload(b, key, params.get("uploadId")!);
  const n = partNumberOf(params.get("partNumber"));
  const dir = uploadDir(b.ctx.options.dataDir, upload.id);
  const previous = (await stat(join(dir, String(n))).catch(() => undefined))?.size ?? 0;
  const free = await freeBytes(b, previous);
  const tmp = stagingFile(b, "part");
  try {
    const got = await receiveBody(req, verified, tmp, { limit: free, tooLarge: tooLarge(b, free), algorithm: algorithmOf(upload) });
    if (!b.ctx.store.volumes.upload(upload.id)) throw s3Errors.noSuchUpload(upload.id); // aborted meanwhile
    const facts: PartFacts = {
      etag: got.md5Hex,
      size: got.size,
      checksum: got.checksum && formatChecksum(got.checksum.algorithm, got.checksum.value),
      at: Date.now(),
    };
    await rename(tmp, join(dir, String(n)));
    await writeFile(join(dir, `${n}.json.tmp`), JSON.stringify(facts));
    await rename(join(dir, `${n}.json.tmp`), join(dir, `${n}.json`));
    sendEmpty(res, 200, { etag: quoted(got.md5Hex), ...(got.checksum ? { [`x-amz-checksum-${got.checksum.algorithm}`]: got.checksum.value } : {}) });
  } finally {
    await rm(tmp, { force: true });
  }
}

const checksumFields = (stored: string | undefined) => {
  const checksum = parseChecksum(stored ?? null);
  return checksum ? { [checksumElement(checksum.algorithm)]: checksum.value } : {};
};

export async function listParts(b: Bucket, key: string, params: URLSearchParams, res: ServerResponse) {
  const upload = mustUpload(b, key, params.get("uploadId")!);
  const marker = params.has("part-number-marker") ? Number(params.get("part-number-marker")) : 0;
  const max = params.has("max-parts") ? Number(params.get("max-parts")) : 1000;
  if (!Number.isInteger(marker) || marker < 0 || !Number.isInteger(max) || max < 0)
    throw s3Errors.invalidArgument("part-number-marker and max-parts must be non-negative integers.");
  const all = [...(await partsOf(b, upload.id)).entries()].filter(([n]) => n > marker).sort(([x], [y]) => x - y);
  const page = all.slice(0, max);
  const algorithm = algorithmOf(upload);
  sendXml(res, "ListPartsResult", {
    Bucket: b.volume.id,
    Key: key,
    UploadId: upload.id,
    PartNumberMarker: marker,
    NextPartNumberMarker: page.length ? page[page.length - 1]![0] : marker,
    MaxParts: max,
    IsTruncated: all.length > page.length,
    ...(algorithm ? { ChecksumAlgorithm: algorithm.toUpperCase() } : {}),
    StorageClass: "STANDARD",
    Part: page.map(([n, p]) => ({ PartNumber: n, LastModified: isoDate(p.at), ETag: quoted(p.etag), Size: p.size, ...checksumFields(p.checksum) })),
  });
}

export async function completeUpload(b: Bucket, key: string, params: URLSearchParams, body: string, res: ServerResponse) {
  const upload = mustUpload(b, key, params.get("uploadId")!);
  const listed = elements(body, "Part").map((p) => ({ n: Number(textOf(p, "PartNumber")), etag: (textOf(p, "ETag") ?? "").replace(/"/g, ""), xml: p }));
  if (listed.length === 0 || listed.some((p) => !Number.isInteger(p.n))) throw s3Errors.malformedXml();
  for (let i = 1; i < listed.length; i++) if (listed[i]!.n <= listed[i - 1]!.n) throw s3Errors.invalidPartOrder();
  const have = await partsOf(b, upload.id);
  const algorithm = algorithmOf(upload);
  const partChecksums: string[] = [];
  listed.forEach((p, i) => {
    const facts = have.get(p.n);
    if (!facts || facts.etag !== p.etag)
      throw s3Errors.invalidPart(`Part ${p.n} was not uploaded or its ETag does not match: list the parts (ListParts) and upload the missing ones.`);
    if (i < listed.length - 1 && facts.size < MIN_PART_BYTES) throw s3Errors.entityTooSmall(p.n);
    if (algorithm) {
      const value = facts.checksum?.slice(algorithm.length + 1);
      const claimed = textOf(p.xml, checksumElement(algorithm));
      if (!value || (claimed !== undefined && claimed !== value))
        throw s3Errors.invalidPart(`Part ${p.n}'s ${algorithm} checksum does not match the one received.`);
      partChecksums.push(value);
    }
  });
  const dir = uploadDir(b.ctx.options.dataDir, upload.id);
  const tmp = stagingFile(b, "join");
  try {
    const md5s: Buffer[] = [];
    for (const p of listed) {
      await pipeline(createReadStream(join(dir, String(p.n))), createWriteStream(tmp, { flags: "a" }));
      md5s.push(Buffer.from(have.get(p.n)!.etag, "hex"));
    }
    const etag = multipartEtag(md5s);
    const checksum = algorithm ? await compositeChecksum(algorithm, partChecksums) : undefined;
    const info = await stat(tmp); // the joined file is the platform's; a rename keeps its mtime
    const place = (await placeOf(b.root, key, true))!;
    try {
      if ((await entryIn(place.dir, place.name))?.isDirectory()) throw s3Errors.invalidKey(`"${key}" is a folder on the volume`);
      await moveInto(tmp, place.dir, place.name, tooLarge(b, await freeBytes(b)));
    } finally {
      await place.close();
    }
    b.ctx.store.volumes.putObject(b.volume.id, {
      key,
      size: info.size,
      mtimeMs: Math.trunc(info.mtimeMs),
      etag,
      checksum: checksum && algorithm ? formatChecksum(algorithm, checksum) : null,
      contentType: upload.contentType,
    });
    b.ctx.store.volumes.removeUpload(upload.id);
    await rm(dir, { recursive: true, force: true });
    sendXml(res, "CompleteMultipartUploadResult", {
      Location: `/${b.volume.id}/${key}`,
      Bucket: b.volume.id,
      Key: key,
      ETag: quoted(etag),
      ...(checksum && algorithm ? { [checksumElement(algorithm)]: checksum, ChecksumType: "COMPOSITE" } : {}),
    });
  } finally {
    await rm(tmp, { force: true });
  }
}

export async function abortUpload(b: Bucket, key: string, params: URLSearchParams, res: ServerResponse) {
  const upload = mustUpload(b, key, params.get("uploadId")!);
  b.ctx.store.volumes.removeUpload(upload.id);
  await rm(uploadDir(b.ctx.options.dataDir, upload.id), { recursive: true, force: true });
  sendEmpty(res, 204);
}

/** Unfinished uploads are dropped this long after they began (their parts count against the volume). */
export const UPLOAD_RETENTION_MS = 7 * 24 * 3600_000;

/** Aborts the multipart uploads begun before `now - UPLOAD_RETENTION_MS` (the platform's file sweep). */
export async function sweepUploads(ctx: Bucket["ctx"], now = Date.now()): Promise<number> {
  const stale = ctx.store.volumes.startedBefore(now - UPLOAD_RETENTION_MS);
  for (const u of stale) {
    ctx.store.volumes.removeUpload(u.id);
    await rm(uploadDir(ctx.options.dataDir, u.id), { recursive: true, force: true });
  }
  return stale.length;
}

export function listUploads(b: Bucket, params: URLSearchParams, res: ServerResponse) {
  const prefix = params.get("prefix") ?? "";
  const uploads = b.ctx.store.volumes.uploads(b.volume.id).filter((u) => u.key.startsWith(prefix));
  sendXml(res, "ListMultipartUploadsResult", {
    Bucket: b.volume.id,
    KeyMarker: "",
    UploadIdMarker: "",
    Prefix: prefix,
    MaxUploads: 1000,
    IsTruncated: false,
    Upload: uploads.map((u) => ({ Key: u.key, UploadId: u.id, Initiated: isoDate(u.createdAt), StorageClass: "STANDARD" })),
  });
}
