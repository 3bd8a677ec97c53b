/**
 * The one JSON error body every svc HTTP server answers (the platform's API and the dev server):
 * `{"error": message, "code": catalogue code}` with the error's status (docs/platform.md, "Limits").
 * Each server's h3 `onError` builds its answer here; the platform's hot path writes it to Node itself.
 */
import { isSvcError } from "./errors.ts";

/** A JSON answer as its status and text. */
export interface Reply {
  status: number;
  text: string;
  /** Headers beside the JSON content type (`retry-after` on a 429). */
  headers?: Record<string, string>;
}

/**
 * `{"error": message, "code": catalogue code}` with the error's status (SvcError; its message ends
 * with the remedy; hosted clients read `error` only), or 500 (anything else, logged).
 */
export function errorReply(error: unknown, log?: (line: string) => void): Reply {
  if (isSvcError(error)) {
    const reply: Reply = { status: error.status, text: JSON.stringify({ error: error.message, code: error.code }) };
    if (error.retryAfterS !== undefined) reply.headers = { "retry-after": String(error.retryAfterS) };
    return reply;
  }
  const status = (error as { status?: number; statusCode?: number })?.status ?? (error as { statusCode?: number })?.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) {
    return { status, text: JSON.stringify({ error: String((error as Error).message || "bad request") }) };
  }
  log?.(`internal error: ${(error as Error)?.stack ?? String(error)}`);
  return { status: 500, text: '{"error":"internal error"}' };
}

/** What a thrown error was: h3 wraps what it did not make in an HTTPError whose `cause` is the thrown error. */
export const thrownBy = (error: { unhandled?: boolean; cause?: unknown }): unknown => (error.unhandled && error.cause instanceof Error ? error.cause : error);
