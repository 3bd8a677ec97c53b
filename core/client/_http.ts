/** REST over undici, with the platform's failures mapped onto the error catalogue. */
import type { Readable } from "node:stream";
import { request } from "undici";
import { errors, isSvcError, type SvcError } from "../errors.ts";

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ECONNRESET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_SOCKET",
]);

/** True for "nobody answered at that address" (directly, in `cause`, or inside an AggregateError). */
export function isConnectionError(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== "object" || depth > 4) return false;
  const e = error as { code?: string; cause?: unknown; errors?: unknown[] };
  if (e.code && CONNECTION_CODES.has(e.code)) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isConnectionError(inner, depth + 1))) return true;
  return isConnectionError(e.cause, depth + 1);
}

/**
 * Maps a thrown transport error: refused → PLATFORM_UNREACHABLE, as is any other failure of fetch
 * (its TypeError "fetch failed" with the reason in `cause`: a blocked port, an unknown scheme); an
 * unparsable address → PLATFORM_URL_INVALID. SvcErrors and aborts pass through.
 */
export function mapTransportError(baseUrl: string, error: unknown): unknown {
  if (isSvcError(error)) return error;
  if (isConnectionError(error)) return errors.PLATFORM_UNREACHABLE(baseUrl, firstConnectionCause(error));
  const e = error as { code?: string; message?: string; cause?: unknown } | undefined;
  if (e?.code === "ERR_INVALID_URL") return errors.PLATFORM_URL_INVALID(baseUrl);
  if (error instanceof TypeError && e?.message === "fetch failed") return errors.PLATFORM_UNREACHABLE(baseUrl, e.cause ?? error);
  return error;
}

function firstConnectionCause(error: unknown): unknown {
  const e = error as { code?: string; cause?: unknown; errors?: unknown[]; message?: string };
  if (e?.code && CONNECTION_CODES.has(e.code)) return e;
  if (Array.isArray(e?.errors)) return e.errors.find((inner) => isConnectionError(inner)) ?? error;
  if (e?.cause) return firstConnectionCause(e.cause);
  return error;
}

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
