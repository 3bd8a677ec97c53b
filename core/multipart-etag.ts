/**
 * S3's ETag of an object uploaded in parts: the MD5 of the parts' MD5s, then `-` and the number of
 * parts. Written once for both ends: the platform gives it to the object it joins
 * (platform/volumes/multipart.ts), and `svc volume` computes it for a local file to compare
 * (cli/volume/etag.ts).
 */
import { createHash } from "node:crypto";

export const multipartEtag = (partMd5s: readonly Buffer[]): string => `${createHash("md5").update(Buffer.concat(partMd5s)).digest("hex")}-${partMd5s.length}`;
