/**
 * The dev server's JSON answers, and its h3 `onError`: routes throw catalogue errors and every one
 * is answered with the body the platform answers (`{"error", "code"}`, core/http-errors.ts).
 */
import type { HTTPError } from "h3";
import { isSvcError, type ErrorCode } from "../../core/errors.ts";
import { errorReply, thrownBy } from "../../core/http-errors.ts";
import type { LbResponse } from "../../core/client/index.ts";

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(`${JSON.stringify(body, null, 2)}\n`, { status, headers: { "content-type": "application/json; charset=utf-8", ...headers } });
}

/** The platform's own failures (refused key, unreachable, broken answer) are a bad gateway from the dev server. */
const PLATFORM_SIDE = new Set<ErrorCode>(["AUTH_FAILED", "AUTH_MISSING", "PLATFORM_UNREACHABLE", "PLATFORM_ERROR", "JOB_WAIT_FAILED"]);

/** The dev app's `onError`: the one place a dev route's error becomes its answer (anything not ours: 500, logged). */
export const onDevRouteError =
  (log?: (line: string) => void) =>
  (error: HTTPError): Response => {
    const thrown = thrownBy(error);
    const reply = errorReply(thrown, log);
    const status = isSvcError(thrown) && PLATFORM_SIDE.has(thrown.code) ? 502 : reply.status;
    return new Response(reply.text, { status, headers: { "content-type": "application/json; charset=utf-8" } });
  };

/** A load-balanced route's answer as the dev server passes it on: text as sent, anything else as JSON. */
export function lbAnswerResponse(answer: LbResponse): Response {
  const type = answer.headers["content-type"];
  if (typeof answer.body === "string" && !(type ?? "").includes("json")) {
    return new Response(answer.body, { status: answer.status, headers: { "content-type": type ?? "text/plain; charset=utf-8" } });
  }
  return json(answer.status, answer.body ?? null);
}
