/**
 * REST over node:http(s), with the platform's failures mapped onto the error catalogue
 * (./_transport-errors.ts). Node's own client, not undici's package: every command that calls the
 * platform loads this, and undici (with graphql-request's graphql) was ~300 ms of a command's CPU
 * before it sent anything. Node's global agent keeps connections alive between a command's calls.
 */
import { request as plainRequest } from "node:http";
import { request as tlsRequest } from "node:https";
import type { Readable } from "node:stream";
import { errors, type SvcError } from "../errors.ts";
import { mapTransportError } from "./_transport-errors.ts";

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  json: unknown;
}

export interface HttpOptions {
  method: string;
  headers?: Record<string, string>;
  body?: string | Buffer | Readable;
  signal?: AbortSignal;
  /** Ms the connection may stay silent, waiting for the answer or within it (long polls need more than the default). */
  headersTimeout?: number;
}

const DEFAULT_TIMEOUT_MS = 330_000;

/** One request; always reads the whole body. Throws only on transport failure and 401. */
export async function httpRequest(baseUrl: string, url: string, options: HttpOptions): Promise<HttpResponse> {
  let status: number;
  let raw: Record<string, string | string[] | undefined>;
  let text: string;
  try {
    ({ status, headers: raw, text } = await send(new URL(url), options));
  } catch (error) {
    throw mapTransportError(baseUrl, error);
  }
  if (status === 401) throw errors.AUTH_FAILED(baseUrl);
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(", ") : String(value);
  }
  let json: unknown;
  if (text && (headers["content-type"]?.includes("json") || /^[\s]*[{[]/.test(text))) {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  return { status, headers, text, json };
}

function send(url: URL, options: HttpOptions): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const request = url.protocol === "https:" ? tlsRequest : url.protocol === "http:" ? plainRequest : undefined;
  if (!request) return Promise.reject(Object.assign(new TypeError(`unsupported protocol ${url.protocol}`), { code: "ERR_INVALID_URL" }));
  const timeout = options.headersTimeout ?? DEFAULT_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method, headers: options.headers, signal: options.signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", reject);
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    req.setTimeout(timeout, () =>
      req.destroy(Object.assign(new Error(`no answer from ${url.host} in ${Math.round(timeout / 1000)} s`), { code: "ETIMEDOUT" })),
    );
    const body = options.body;
    if (body === undefined || typeof body === "string" || Buffer.isBuffer(body)) req.end(body);
    else {
      body.on("error", (error) => req.destroy(error));
      body.pipe(req);
    }
  });
}

/** The platform's `{"error": "..."}` body (or the text) as a PLATFORM_ERROR. */
export function httpError(operation: string, response: HttpResponse): SvcError {
  const body = response.json as { error?: unknown; message?: unknown } | undefined;
  const detail = body?.error ?? body?.message ?? response.text ?? "";
  const message = typeof detail === "string" ? detail : JSON.stringify(detail);
  return errors.PLATFORM_ERROR(operation, `HTTP ${response.status}${message ? `: ${message}` : ""}`);
}
