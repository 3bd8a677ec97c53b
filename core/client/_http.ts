/** REST over undici, with the platform's failures mapped onto the error catalogue (./_transport-errors.ts). */
import type { Readable } from "node:stream";
import { request } from "undici";
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
  /** Ms to wait for response headers (long polls need more than the default). */
  headersTimeout?: number;
}

/** One request; always reads the whole body. Throws only on transport failure and 401. */
export async function httpRequest(baseUrl: string, url: string, options: HttpOptions): Promise<HttpResponse> {
  let response: Awaited<ReturnType<typeof request>>;
  try {
    response = await request(url, {
      method: options.method as "GET",
      headers: options.headers,
      body: options.body,
      signal: options.signal,
      headersTimeout: options.headersTimeout ?? 330_000,
      bodyTimeout: options.headersTimeout ?? 330_000,
    });
  } catch (error) {
    throw mapTransportError(baseUrl, error);
  }
  const text = await response.body.text();
  if (response.statusCode === 401) throw errors.AUTH_FAILED(baseUrl);
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(response.headers)) {
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
  return { status: response.statusCode, headers, text, json };
}

/** The platform's `{"error": "..."}` body (or the text) as a PLATFORM_ERROR. */
export function httpError(operation: string, response: HttpResponse): SvcError {
  const body = response.json as { error?: unknown; message?: unknown } | undefined;
  const detail = body?.error ?? body?.message ?? response.text ?? "";
  const message = typeof detail === "string" ? detail : JSON.stringify(detail);
  return errors.PLATFORM_ERROR(operation, `HTTP ${response.status}${message ? `: ${message}` : ""}`);
}
