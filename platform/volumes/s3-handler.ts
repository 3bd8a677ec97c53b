/**
 * The volumes' S3-compatible API at `<platform>/s3` (path-style: `/s3/<volume id>/<key>`; clients
 * set it as their endpoint URL with path-style addressing): SigV4 with the platform's S3 key pair
 * (credentials.ts), never the API key. Plain Node request/response: bodies stream to disk and the
 * signature covers the raw path and query. docs/volumes.md lists the operations.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { verify, type SignedRequest, type Verified } from "./sigv4.ts";
import { s3Credentials } from "./credentials.ts";
import { bucketOf, type Bucket, type VolumesContext } from "./bucket.ts";
import { stagingDir } from "./paths.ts";
import { S3Error, s3Errors } from "./s3-error.ts";
import { isoDate, sendEmpty, sendError, sendXml } from "./s3-reply.ts";
import { deleteObject, deleteObjects, getObject, listObjects, putObject } from "./objects.ts";
import { abortUpload, completeUpload, createUpload, listParts, listUploads, uploadPart } from "./multipart.ts";

export const S3_PREFIX = "/s3";
const MAX_XML_BODY = 4_000_000;

function signedRequest(req: IncomingMessage, rawPath: string, rawQuery: string): SignedRequest {
  const headers = new Map<string, string[]>();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    const list = headers.get(name);
    if (list) list.push(req.rawHeaders[i + 1]!);
    else headers.set(name, [req.rawHeaders[i + 1]!]);
  }
  return { method: req.method ?? "GET", rawPath, rawQuery, headers };
}

/** A small XML request body (complete, delete objects), checked against the signed SHA-256. */
async function readXml(req: IncomingMessage, verified: Verified): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_XML_BODY) throw s3Errors.malformedXml();
    chunks.push(chunk);
  }
  const body = Buffer.concat(chunks);
  if (/^[0-9a-f]{64}$/.test(verified.payloadHash) && createHash("sha256").update(body).digest("hex") !== verified.payloadHash)
    throw s3Errors.contentSha256Mismatch();
  return body.toString("utf8");
}

function decodeKey(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw s3Errors.invalidKey("it is not valid percent-encoding");
  }
}

export interface S3Api {
  /** Whether this request is the S3 API's (its path is under /s3). */
  owns(url: string | undefined): boolean;
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** The access key a request is signed with, when its signature verifies (the connection caps count by it). */
  signer(req: IncomingMessage): string | undefined;
}

export function createS3Api(ctx: VolumesContext): S3Api {
  mkdirSync(stagingDir(ctx.options.dataDir), { recursive: true, mode: 0o700 });
  const credentials = s3Credentials(ctx.store);
  const secretFor = (id: string) => (id === credentials.accessKeyId ? credentials.secretAccessKey : undefined);

  const mustBucket = (id: string): Bucket => {
    const volume = ctx.store.volumes.get(id);
    if (!volume) throw s3Errors.noSuchBucket(id);
    return bucketOf(ctx, volume);
  };

  const split = (req: IncomingMessage) => {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    return { rawPath: q < 0 ? url : url.slice(0, q), rawQuery: q < 0 ? "" : url.slice(q + 1) };
  };

  async function route(req: IncomingMessage, res: ServerResponse) {
    const { rawPath, rawQuery } = split(req);
    const verified = verify(signedRequest(req, rawPath, rawQuery), secretFor);
    const params = new URLSearchParams(rawQuery);
    const method = req.method ?? "GET";
    const rest = rawPath.slice(S3_PREFIX.length).replace(/^\//, "");
    const slash = rest.indexOf("/");
    const bucketId = decodeKey(slash < 0 ? rest : rest.slice(0, slash));
    const key = slash < 0 ? "" : decodeKey(rest.slice(slash + 1));

    if (!bucketId) {
      if (method !== "GET") throw s3Errors.methodNotAllowed();
      return sendXml(res, "ListAllMyBucketsResult", {
        Owner: { ID: "local", DisplayName: "local" },
        Buckets: { Bucket: ctx.store.volumes.list().map((v) => ({ Name: v.id, CreationDate: isoDate(v.createdAt), BucketRegion: v.dataCenterId })) },
      });
    }
    const b = mustBucket(bucketId);
    const region = { "x-amz-bucket-region": b.volume.dataCenterId };
    if (!key) {
      if (method === "HEAD") return sendEmpty(res, 200, region);
      if (method === "GET" && params.has("location")) return sendXml(res, "LocationConstraint", b.volume.dataCenterId, region);
      if (method === "GET" && params.has("uploads")) return listUploads(b, params, res);
      if (method === "GET") return listObjects(b, params, res);
      if (method === "POST" && params.has("delete")) return deleteObjects(b, await readXml(req, verified), res);
      if (method === "PUT")
        throw new S3Error(
          "BucketAlreadyOwnedByYou",
          "The volume exists: volumes are created with `svc volume create` (or the createNetworkVolume mutation).",
          409,
          bucketId,
        );
      if (method === "DELETE") throw s3Errors.accessDenied("Volumes are deleted with `svc volume delete`, not through the S3 API.");
      throw s3Errors.methodNotAllowed();
    }
    if (params.has("uploadId")) {
      if (method === "PUT" && params.has("partNumber")) {
        if (req.headers["x-amz-copy-source"]) throw s3Errors.notImplemented("UploadPartCopy");
        return uploadPart(b, key, params, req, res, verified);
      }
      if (method === "GET") return listParts(b, key, params, res);
      if (method === "POST") return completeUpload(b, key, params, await readXml(req, verified), res);
      if (method === "DELETE") return abortUpload(b, key, params, res);
      throw s3Errors.methodNotAllowed();
    }
    if (method === "POST" && params.has("uploads")) return createUpload(b, key, req, res);
    if (method === "PUT") {
      if (req.headers["x-amz-copy-source"]) throw s3Errors.notImplemented("CopyObject");
      return putObject(b, key, req, res, verified);
    }
    if (method === "GET" || method === "HEAD") return getObject(b, key, req, res, method === "HEAD");
    if (method === "DELETE") return deleteObject(b, key, res);
    throw s3Errors.methodNotAllowed();
  }

  return {
    signer(req) {
      const { rawPath, rawQuery } = split(req);
      try {
        return verify(signedRequest(req, rawPath, rawQuery), secretFor).accessKeyId;
      } catch {
        return undefined;
      }
    },
    owns: (url) => url !== undefined && (url === S3_PREFIX || url.startsWith(`${S3_PREFIX}/`) || url.startsWith(`${S3_PREFIX}?`)),
    handle(req, res) {
      route(req, res).catch((error: unknown) => {
        const isHead = req.method === "HEAD";
        if (error instanceof S3Error) {
          // An error before the body was read: the client may still be sending it; close after answering.
          if (!req.complete) res.setHeader("connection", "close");
          sendError(res, error, isHead);
          return;
        }
        const code = (error as NodeJS.ErrnoException)?.code;
        if (code === "ENOENT" || code === "ENOTDIR" || code === "EISDIR")
          return sendError(res, s3Errors.invalidRequest(`The key cannot be written or read here (${code}).`), isHead);
        ctx.options.log(`s3: internal error: ${(error as Error)?.stack ?? error}`);
        sendError(res, new S3Error("InternalError", "We encountered an internal error. Please try again.", 500), isHead);
      });
    },
  };
}
