/** The dev server's JSON answers and error bodies (`{"error": {"code", "message", "remedy"?}}`), shared by its routes. */
import { isSvcError } from "../../core/errors.ts";
import type { LbResponse } from "../../core/client/index.ts";

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(`${JSON.stringify(body, null, 2)}\n`, { status, headers: { "content-type": "application/json; charset=utf-8", ...headers } });
}

export function errorResponse(status: number, code: string, message: string, extra: Record<string, unknown> = {}): Response {
  return json(status, { error: { code, message, ...extra } });
}

/** SvcErrors keep their code; the platform's failures are a bad gateway; anything else is ours (500). */
export function toErrorResponse(error: unknown): Response {
  if (isSvcError(error)) {
    const platformSide = ["AUTH_FAILED", "AUTH_MISSING", "PLATFORM_UNREACHABLE", "PLATFORM_ERROR", "JOB_WAIT_FAILED"].includes(error.code);
    const status = platformSide ? 502 : error.status >= 400 && error.status < 600 ? error.status : 500;
    return errorResponse(status, error.code, error.message, error.remedy ? { remedy: error.remedy } : {});
  }
  return errorResponse(500, "INTERNAL", String((error as Error)?.message ?? error));
}

/** A load-balanced route's answer as the dev server passes it on: text as sent, anything else as JSON. */
export function lbAnswerResponse(answer: LbResponse): Response {
  const type = answer.headers["content-type"];
  if (typeof answer.body === "string" && !(type ?? "").includes("json")) {
    return new Response(answer.body, { status: answer.status, headers: { "content-type": type ?? "text/plain; charset=utf-8" } });
  }
  return json(answer.status, answer.body ?? null);
}
