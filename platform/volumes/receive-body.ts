/**
 * Receives an S3 write's body into a file: plain or aws-chunked (the AWS SDK v3 streams with
 * `STREAMING-UNSIGNED-PAYLOAD-TRAILER` and a CRC32 trailer; signed chunks are checked against the
 * seed signature), counting against the volume's free bytes, computing the MD5 (the ETag), the
 * signed SHA-256 and the flexible checksum the client names, and refusing a mismatch.
 */
import type { IncomingMessage } from "node:http";
import { createHash, type Hash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { once } from "node:events";
import { finished } from "node:stream/promises";
import { S3Error, s3Errors } from "./s3-error.ts";
import { chunkSignature, sameHex, trailerSignature, type Verified } from "./sigv4.ts";
import { createChecksum, isChecksumAlgorithm, type Checksum, type ChecksumAlgorithm } from "./checksums.ts";

export interface Received {
  size: number;
  md5Hex: string;
  checksum?: { algorithm: ChecksumAlgorithm; value: string };
}

export interface ReceiveOptions {
  /** More bytes than this is EntityTooLarge (the volume's free space). */
  limit: number;
  tooLarge: () => S3Error;
  /** Compute this checksum when the request names none (a multipart upload's algorithm). */
  algorithm?: ChecksumAlgorithm | null;
}

const headerOf = (req: IncomingMessage, name: string) => {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(",") : v;
};

/** The checksum algorithm a write names: an x-amz-checksum-<alg> header, its trailer, or x-amz-sdk-checksum-algorithm. */
function requestedChecksum(req: IncomingMessage): { algorithm: ChecksumAlgorithm; expected?: string; inTrailer: boolean } | undefined {
  for (const [name, value] of Object.entries(req.headers)) {
    const m = /^x-amz-checksum-(.+)$/.exec(name);
    if (m && isChecksumAlgorithm(m[1]!) && typeof value === "string") return { algorithm: m[1]!, expected: value, inTrailer: false };
  }
  const trailer = headerOf(req, "x-amz-trailer")?.trim().toLowerCase();
  const fromTrailer = trailer ? /^x-amz-checksum-(.+)$/.exec(trailer)?.[1] : undefined;
  if (fromTrailer && isChecksumAlgorithm(fromTrailer)) return { algorithm: fromTrailer, inTrailer: true };
  const named = headerOf(req, "x-amz-sdk-checksum-algorithm")?.toLowerCase();
  return named && isChecksumAlgorithm(named) ? { algorithm: named, inTrailer: false } : undefined;
}

/**
 * aws-chunked decoding, fed the raw body piece by piece: `<hex>[;chunk-signature=<sig>]\r\n<data>\r\n`…
 * `0[;chunk-signature=<sig>]\r\n<trailer lines>\r\n`. Hands the payload on to `onData`; checks signed chunks.
 */
class ChunkedDecoder {
  private state: "size" | "data" | "dataEnd" | "trailer" | "done" = "size";
  private pending = Buffer.alloc(0);
  private left = 0;
  private signature?: string;
  private previous: string | undefined;
  private chunkHash?: Hash;
  private trailerText = "";
  readonly trailers = new Map<string, string>();

  constructor(
    private readonly onData: (data: Buffer) => Promise<void>,
    private readonly signed: Verified | undefined,
  ) {
    this.previous = signed?.signature;
  }

  get done() {
    return this.state === "done";
  }

  async push(input: Buffer): Promise<void> {
    let buf = this.pending.length ? Buffer.concat([this.pending, input]) : input;
    this.pending = Buffer.alloc(0);
    while (buf.length > 0 && this.state !== "done") {
      if (this.state === "data") {
        const take = buf.subarray(0, Math.min(this.left, buf.length));
        this.chunkHash?.update(take);
        await this.onData(take);
        this.left -= take.length;
        buf = buf.subarray(take.length);
        if (this.left === 0) {
          this.endChunk();
          this.state = "dataEnd";
        }
        continue;
      }
      if (this.state === "dataEnd") {
        if (buf.length < 2) break;
        if (buf[0] !== 13 || buf[1] !== 10) throw s3Errors.incompleteBody();
        buf = buf.subarray(2);
        this.state = "size";
        continue;
      }
      const eol = buf.indexOf("\r\n");
      if (eol < 0) {
        if (buf.length > 8192) throw s3Errors.incompleteBody();
        break;
      }
      const line = buf.subarray(0, eol).toString("latin1");
      buf = buf.subarray(eol + 2);
      if (this.state === "trailer") this.trailerLine(line);
      else this.sizeLine(line);
    }
    if (buf.length > 0 && this.state !== "done") this.pending = Buffer.from(buf);
  }

  private sizeLine(line: string) {
    const [size = "", ...ext] = line.split(";");
    const n = Number.parseInt(size, 16);
    if (!/^[0-9a-fA-F]{1,15}$/.test(size)) throw s3Errors.incompleteBody();
    this.signature = ext.find((e) => e.startsWith("chunk-signature="))?.slice("chunk-signature=".length);
    if (this.signed && !this.signature) throw s3Errors.signatureDoesNotMatch();
    this.chunkHash = this.signed ? createHash("sha256") : undefined;
    this.left = n;
    if (n > 0) this.state = "data";
    else {
      this.endChunk();
      this.state = "trailer";
    }
  }

  private endChunk() {
    if (!this.signed) return;
    const sig = chunkSignature(this.signed, this.previous!, this.chunkHash!.digest("hex"));
    if (!sameHex(sig, this.signature ?? "")) throw s3Errors.signatureDoesNotMatch();
    this.previous = sig;
  }

  private trailerLine(line: string) {
    if (line === "") {
      this.state = "done";
      return;
    }
    const at = line.indexOf(":");
    if (at < 0) throw s3Errors.incompleteBody();
    const name = line.slice(0, at).trim().toLowerCase();
    const value = line.slice(at + 1).trim();
    if (name === "x-amz-trailer-signature") {
      if (this.signed && !sameHex(trailerSignature(this.signed, this.previous!, this.trailerText), value)) throw s3Errors.signatureDoesNotMatch();
      return;
    }
    this.trailerText += `${name}:${value}\n`;
    this.trailers.set(name, value);
  }
}

/**
 * Writes the body to `path` (created, truncated) and answers its size, MD5 and checksum; throws the
 * S3 error (and leaves the half-written file for the caller to delete) when it does not add up.
 */
export async function receiveBody(req: IncomingMessage, verified: Verified, path: string, options: ReceiveOptions): Promise<Received> {
  const mode = verified.payloadHash;
  const header = (name: string) => headerOf(req, name);
  const chunked = mode.startsWith("STREAMING-") || /(^|,)\s*aws-chunked\s*(,|$)/.test(header("content-encoding") ?? "");
  const declared = Number(header(chunked ? "x-amz-decoded-content-length" : "content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > options.limit) throw options.tooLarge();
  const wanted = requestedChecksum(req) ?? (options.algorithm ? { algorithm: options.algorithm, inTrailer: false } : undefined);
  const checksum: Checksum | undefined = wanted && (await createChecksum(wanted.algorithm));
  const md5 = createHash("md5");
  const sha256 = /^[0-9a-f]{64}$/.test(mode) ? createHash("sha256") : undefined;
  // A write stream (not one awaited write per chunk): the disk works while the next chunks arrive.
  const file = createWriteStream(path);
  let failed: Error | undefined;
  file.on("error", (error) => (failed = error));
  let size = 0;
  const onData = async (data: Buffer) => {
    size += data.length;
    if (size > options.limit) throw options.tooLarge();
    md5.update(data);
    sha256?.update(data);
    checksum?.update(data);
    if (failed) throw failed;
    if (!file.write(data)) await once(file, "drain");
  };
  const decoder = chunked ? new ChunkedDecoder(onData, mode.startsWith("STREAMING-AWS4-HMAC-SHA256-PAYLOAD") ? verified : undefined) : undefined;
  try {
    for await (const piece of req as AsyncIterable<Buffer>) {
      if (decoder) await decoder.push(piece);
      else await onData(piece);
    }
  } catch (error) {
    if (error instanceof S3Error) throw error;
    if (failed) throw failed; // the disk's error, not the client's
    throw s3Errors.incompleteBody(); // the client went away mid-body
  } finally {
    file.end();
    await finished(file).catch(() => undefined);
  }
  if (failed) throw failed;
  if (decoder && !decoder.done) throw s3Errors.incompleteBody();
  if (Number.isFinite(declared) && size !== declared) throw s3Errors.incompleteBody();
  if (sha256 && sha256.digest("hex") !== mode) throw s3Errors.contentSha256Mismatch();
  const received: Received = { size, md5Hex: md5.digest("hex") };
  const contentMd5 = header("content-md5");
  if (contentMd5 && Buffer.from(received.md5Hex, "hex").toString("base64") !== contentMd5.trim()) throw s3Errors.badDigest("Content-MD5");
  if (wanted && checksum) {
    const value = await checksum.digest();
    const expected = wanted.inTrailer ? decoder?.trailers.get(`x-amz-checksum-${wanted.algorithm}`) : wanted.expected;
    if (expected !== undefined && expected !== value) throw s3Errors.badDigest(`x-amz-checksum-${wanted.algorithm}`);
    if (wanted.inTrailer && expected === undefined)
      throw s3Errors.invalidRequest(`The trailer x-amz-checksum-${wanted.algorithm} announced in x-amz-trailer did not come.`);
    received.checksum = { algorithm: wanted.algorithm, value };
  }
  return received;
}
