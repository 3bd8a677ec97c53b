/**
 * AWS Signature Version 4 as S3 checks it (header auth and presigned query auth): the canonical
 * request from the raw path and query as sent, the string to sign, the signing key. Pure logic:
 * s3-handler.ts feeds it the request; receive-body.ts uses the seed signature for signed chunks.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { s3Errors } from "./s3-error.ts";

const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const ALGORITHM = "AWS4-HMAC-SHA256";
const MAX_SKEW_MS = 15 * 60_000;
const PRESIGN_MAX_S = 7 * 24 * 3600;

export interface SignedRequest {
  method: string;
  /** The path as sent, still percent-encoded (S3 signs it as is). */
  rawPath: string;
  /** The query string as sent, without `?`. */
  rawQuery: string;
  /** Header name (lowercase) → values as sent (Node's rawHeaders), joined later with `,`. */
  headers: Map<string, string[]>;
}

export interface Verified {
  accessKeyId: string;
  /** `20261125/us-east-1/s3/aws4_request` */
  scope: string;
  amzDate: string;
  signature: string;
  signingKey: Buffer;
  /** x-amz-content-sha256: a hex digest, UNSIGNED-PAYLOAD or a STREAMING-* mode (presigned: UNSIGNED-PAYLOAD). */
  payloadHash: string;
}

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
const hmac = (key: Buffer | string, data: string) => createHmac("sha256", key).update(data).digest();

/** RFC 3986 encoding as SigV4 wants it (encodeURIComponent leaves !'()* alone). */
const strictEncode = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw s3Errors.invalidArgument("The query string is not valid percent-encoding.");
  }
}

/** Sorted `k=v&…` with keys and values re-encoded strictly; `skip` leaves X-Amz-Signature out of presigned URLs. */
export function canonicalQuery(rawQuery: string, skip?: string): string {
  if (!rawQuery) return "";
  const pairs = rawQuery
    .split("&")
    .filter((p) => p !== "")
    .map((p) => {
      const at = p.indexOf("=");
      return at < 0 ? [strictEncode(decode(p)), ""] : [strictEncode(decode(p.slice(0, at))), strictEncode(decode(p.slice(at + 1)))];
    })
    .filter(([k]) => k !== skip);
  pairs.sort(([a, av], [b, bv]) => (a! < b! ? -1 : a! > b! ? 1 : av! < bv! ? -1 : av! > bv! ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join("&");
}

const headerValue = (values: string[] | undefined) => (values ?? []).map((v) => v.trim().replace(/\s+/g, " ")).join(",");

export function signingKey(secret: string, date: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), "aws4_request");
}

export function stringToSign(req: SignedRequest, signedHeaders: string[], payloadHash: string, amzDate: string, scope: string, skipQuery?: string): string {
  const canonical = [
    req.method,
    req.rawPath,
    canonicalQuery(req.rawQuery, skipQuery),
    signedHeaders.map((h) => `${h}:${headerValue(req.headers.get(h))}\n`).join(""),
    signedHeaders.join(";"),
    payloadHash,
  ].join("\n");
  return `${ALGORITHM}\n${amzDate}\n${scope}\n${sha256(canonical)}`;
}

const sameHex = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** `20261125T101500Z` → ms since the epoch (NaN when malformed). */
function amzTime(amzDate: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  return m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) : Number.NaN;
}

interface Parts {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
  amzDate: string;
  payloadHash: string;
  presigned: boolean;
}

function headerParts(req: SignedRequest, authorization: string): Parts {
  const m = /^AWS4-HMAC-SHA256\s+(.*)$/.exec(authorization.trim());
  if (!m) throw s3Errors.invalidArgument("Only AWS4-HMAC-SHA256 (Signature Version 4) requests are supported.");
  const fields = new Map(m[1]!.split(",").map((f) => f.trim().split("=", 2) as [string, string]));
  const credential = fields.get("Credential")?.split("/") ?? [];
  const signedHeaders = fields.get("SignedHeaders")?.split(";") ?? [];
  const signature = fields.get("Signature") ?? "";
  if (credential.length !== 5 || credential[4] !== "aws4_request" || signedHeaders.length === 0 || !signature) {
    throw s3Errors.invalidArgument("The Authorization header is malformed: Credential, SignedHeaders and Signature are required.");
  }
  const amzDate = headerValue(req.headers.get("x-amz-date")) || "";
  const payloadHash = headerValue(req.headers.get("x-amz-content-sha256"));
  if (!payloadHash) throw s3Errors.invalidRequest("Missing required header for this request: x-amz-content-sha256.");
  const [accessKeyId, date, region, service] = credential as [string, string, string, string];
  return { accessKeyId, date, region, service, signedHeaders, signature, amzDate, payloadHash, presigned: false };
}

function queryParts(params: URLSearchParams): Parts {
  const credential = (params.get("X-Amz-Credential") ?? "").split("/");
  if (params.get("X-Amz-Algorithm") !== ALGORITHM || credential.length !== 5)
    throw s3Errors.invalidArgument("Only AWS4-HMAC-SHA256 presigned URLs are supported.");
  const amzDate = params.get("X-Amz-Date") ?? "";
  const expires = Number(params.get("X-Amz-Expires") ?? "");
  if (!Number.isInteger(expires) || expires < 1 || expires > PRESIGN_MAX_S)
    throw s3Errors.invalidArgument("X-Amz-Expires must be between 1 and 604800 seconds.");
  if (Date.now() > amzTime(amzDate) + expires * 1000) throw s3Errors.accessDenied("Request has expired.");
  const [accessKeyId, date, region, service] = credential as [string, string, string, string];
  return {
    accessKeyId,
    date,
    region,
    service,
    signedHeaders: (params.get("X-Amz-SignedHeaders") ?? "host").split(";"),
    signature: params.get("X-Amz-Signature") ?? "",
    amzDate,
    payloadHash: "UNSIGNED-PAYLOAD",
    presigned: true,
  };
}

/**
 * Checks a request's signature with the secret of its access key id (`secretFor` answers undefined
 * for an unknown one); throws the S3 error a client understands, else answers what was signed.
 */
export function verify(req: SignedRequest, secretFor: (accessKeyId: string) => string | undefined, now = Date.now()): Verified {
  const authorization = headerValue(req.headers.get("authorization"));
  const params = new URLSearchParams(req.rawQuery);
  let parts: Parts;
  if (authorization) parts = headerParts(req, authorization);
  else if (params.has("X-Amz-Signature")) parts = queryParts(params);
  else throw s3Errors.accessDenied("Anonymous requests are not allowed: sign them with the access key of `svc volume credentials`.");
  const secret = secretFor(parts.accessKeyId);
  if (secret === undefined) throw s3Errors.invalidAccessKeyId();
  const time = amzTime(parts.amzDate);
  if (Number.isNaN(time) || !parts.amzDate.startsWith(parts.date))
    throw s3Errors.accessDenied("X-Amz-Date is missing or does not match the credential's date.");
  if (!parts.presigned && Math.abs(now - time) > MAX_SKEW_MS) throw s3Errors.timeSkewed();
  if (!parts.signedHeaders.includes("host")) throw s3Errors.accessDenied("The host header must be signed.");
  const scope = `${parts.date}/${parts.region}/${parts.service}/aws4_request`;
  const key = signingKey(secret, parts.date, parts.region, parts.service);
  const expected = hmac(
    key,
    stringToSign(req, parts.signedHeaders, parts.payloadHash, parts.amzDate, scope, parts.presigned ? "X-Amz-Signature" : undefined),
  ).toString("hex");
  if (!sameHex(expected, parts.signature)) throw s3Errors.signatureDoesNotMatch();
  return { accessKeyId: parts.accessKeyId, scope, amzDate: parts.amzDate, signature: parts.signature, signingKey: key, payloadHash: parts.payloadHash };
}

/** The signature of one aws-chunked chunk (STREAMING-AWS4-HMAC-SHA256-PAYLOAD) from its SHA-256, chained from the previous one. */
export function chunkSignature(v: Pick<Verified, "signingKey" | "amzDate" | "scope">, previous: string, chunkSha256Hex: string): string {
  return hmac(v.signingKey, `${ALGORITHM}-PAYLOAD\n${v.amzDate}\n${v.scope}\n${previous}\n${EMPTY_SHA256}\n${chunkSha256Hex}`).toString("hex");
}

/** The signature of the trailing headers (STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER). */
export function trailerSignature(v: Pick<Verified, "signingKey" | "amzDate" | "scope">, previous: string, trailerText: string): string {
  return hmac(v.signingKey, `${ALGORITHM}-TRAILER\n${v.amzDate}\n${v.scope}\n${previous}\n${sha256(trailerText)}`).toString("hex");
}

export { sameHex };
