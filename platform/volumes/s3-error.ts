/**
 * Errors of the volumes' S3 API, in S3's own codes and XML (what the AWS SDKs and boto3 parse into
 * NoSuchKey, SignatureDoesNotMatch, …): the protocol's codes, not svc's catalogue (docs/volumes.md).
 */
import { docRef } from "../../core/errors.ts";

export class S3Error extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly resource?: string,
  ) {
    super(message);
    this.name = "S3Error";
  }
}

export const s3Errors = {
  accessDenied: (why: string) => new S3Error("AccessDenied", why, 403),
  invalidAccessKeyId: () =>
    new S3Error("InvalidAccessKeyId", "The access key id you provided does not exist in our records: `svc volume credentials` prints this platform's.", 403),
  signatureDoesNotMatch: () =>
    new S3Error(
      "SignatureDoesNotMatch",
      "The request signature we calculated does not match the signature you provided. Check your secret access key and signing method.",
      403,
    ),
  timeSkewed: () =>
    new S3Error("RequestTimeTooSkewed", "The difference between the request time and the server's time is too large (15 minutes at most).", 403),
  noSuchBucket: (bucket: string) =>
    new S3Error(
      "NoSuchBucket",
      `The specified bucket does not exist: no volume "${bucket}" (the bucket is the volume's id; \`svc volume list\`).`,
      404,
      bucket,
    ),
  noSuchKey: (key: string) => new S3Error("NoSuchKey", "The specified key does not exist.", 404, key),
  noSuchUpload: (id: string) => new S3Error("NoSuchUpload", "The specified multipart upload does not exist: it was completed or aborted.", 404, id),
  invalidObjectState: (why: string) => new S3Error("InvalidObjectState", why, 403),
  invalidArgument: (why: string) => new S3Error("InvalidArgument", why, 400),
  invalidRequest: (why: string) => new S3Error("InvalidRequest", why, 400),
  invalidKey: (why: string) => new S3Error("InvalidArgument", `Invalid object key: ${why}.`, 400),
  invalidRange: (size: number) => new S3Error("InvalidRange", `The requested range is not satisfiable (the object has ${size} bytes).`, 416),
  invalidPart: (why: string) => new S3Error("InvalidPart", why, 400),
  invalidPartOrder: () => new S3Error("InvalidPartOrder", "The list of parts was not in ascending order.", 400),
  entityTooSmall: (part: number) => new S3Error("EntityTooSmall", `Part ${part} is smaller than the 5 MiB minimum of every part but the last.`, 400),
  entityTooLarge: (volume: string, sizeGb: number, free: number) =>
    new S3Error(
      "EntityTooLarge",
      `Your write is over volume ${volume}'s size of ${sizeGb} GB (${free} bytes free): delete objects or create a larger volume.`,
      400,
    ),
  badDigest: (what: string) => new S3Error("BadDigest", `The ${what} you specified did not match the data received.`, 400),
  contentSha256Mismatch: () => new S3Error("XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.", 400),
  incompleteBody: () => new S3Error("IncompleteBody", "You did not provide the number of bytes specified by the Content-Length header.", 400),
  malformedXml: () => new S3Error("MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.", 400),
  notImplemented: (what: string) =>
    new S3Error("NotImplemented", `${what} is not implemented by this platform's S3 API (${docRef("volumes.md")} lists what is).`, 400),
  methodNotAllowed: () => new S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.", 405),
};
