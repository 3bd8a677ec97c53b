/** Writing S3 answers to Node's response: XML bodies, empty answers, errors (with the request id S3 clients log). */
import type { ServerResponse } from "node:http";
import { randomBytes } from "node:crypto";
import { errorXml, xmlDocument, type XmlNode } from "./xml.ts";
import type { S3Error } from "./s3-error.ts";

export type Headers = Record<string, string | number>;

export const requestId = () => randomBytes(8).toString("hex").toUpperCase();

function head(res: ServerResponse, status: number, headers: Headers) {
  res.statusCode = status;
  res.setHeader("x-amz-request-id", requestId());
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
}

export function sendXml(res: ServerResponse, root: string, body: XmlNode | string, headers: Headers = {}, status = 200) {
  const text = xmlDocument(root, body);
  head(res, status, { "content-type": "application/xml", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function sendEmpty(res: ServerResponse, status: number, headers: Headers = {}) {
  head(res, status, { "content-length": 0, ...headers });
  res.end();
}

/** An S3Error as S3's XML; `head` requests get the status only (HEAD has no body). */
export function sendError(res: ServerResponse, error: S3Error, isHead: boolean) {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = errorXml(error, requestId());
  head(res, error.status, isHead ? { "content-length": 0 } : { "content-type": "application/xml", "content-length": Buffer.byteLength(text) });
  res.end(isHead ? undefined : text);
}

export const httpDate = (ms: number) => new Date(ms).toUTCString();
export const isoDate = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, ".000Z");
export const quoted = (etag: string) => `"${etag}"`;
