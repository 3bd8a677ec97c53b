/**
 * A transport failure (node:http's, or fetch's) as the error catalogue says it: nobody answering is
 * PLATFORM_UNREACHABLE. Apart from ./http.ts so that ./shell.ts maps its own requests' failures the same way.
 */
import { errors, isSvcError } from "../errors.ts";

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
