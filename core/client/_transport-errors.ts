/**
 * A transport failure (node:http's: ./http.ts and ./shell.ts both map theirs here) as the error
 * catalogue says it: nobody answering is PLATFORM_UNREACHABLE.
 */
import { errors, isSvcError } from "../errors.ts";

const CONNECTION_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "ECONNRESET"]);

/** True for "nobody answered at that address" (directly, in `cause`, or inside an AggregateError). */
export function isConnectionError(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== "object" || depth > 4) return false;
  const e = error as { code?: string; cause?: unknown; errors?: unknown[] };
  if (e.code && CONNECTION_CODES.has(e.code)) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isConnectionError(inner, depth + 1))) return true;
  return isConnectionError(e.cause, depth + 1);
}

/**
 * Maps a thrown transport error: refused (or reset, unresolvable, unroutable) → PLATFORM_UNREACHABLE;
 * an unparsable address or one of another scheme → PLATFORM_URL_INVALID. SvcErrors and aborts pass through.
 */
export function mapTransportError(baseUrl: string, error: unknown): unknown {
  if (isSvcError(error)) return error;
  if (isConnectionError(error)) return errors.PLATFORM_UNREACHABLE(baseUrl, firstConnectionCause(error));
  const e = error as { code?: string } | undefined;
  if (e?.code === "ERR_INVALID_URL") return errors.PLATFORM_URL_INVALID(baseUrl);
  return error;
}

function firstConnectionCause(error: unknown): unknown {
  const e = error as { code?: string; cause?: unknown; errors?: unknown[]; message?: string };
  if (e?.code && CONNECTION_CODES.has(e.code)) return e;
  if (Array.isArray(e?.errors)) return e.errors.find((inner) => isConnectionError(inner)) ?? error;
  if (e?.cause) return firstConnectionCause(e.cause);
  return error;
}
