/**
 * The dev server's HTTP app (h3 v2): health, docs, OpenAPI, queue-based runsync/status and the
 * load-balanced proxy. It reads everything through `DevRoutesState`, so unit tests drive it with
 * `app.request()` and a fake state, without a platform.
 *
 * Answers are JSON. Routes throw catalogue errors; the app's onError answers them all with the
 * platform's body `{"error", "code"}` (responses.ts): 400 bad JSON or input, 404 unknown route,
 * 405 wrong method, 502 when the platform failed. Bad input never gives a 500.
 */
import { H3, type H3Event } from "h3";
import { errors } from "../../core/errors.ts";
import { jobErrorView, type Job } from "../../core/client/index.ts";
import { docsHtml, readDocsAsset } from "./docs.ts";
import { parseJsonBody, parseRunsyncBody, runsyncStatus } from "./input.ts";
import { generateOpenApi } from "./openapi.ts";
import { LIVE_PROXY_PREFIX } from "../live-proxy-url.ts";
import { handleLiveProxy } from "./live-proxy.ts";
import { json, lbAnswerResponse, onDevRouteError } from "./responses.ts";
import { preferredAlias, resolveRoute } from "./routes-table.ts";
import type { DevRoutesState } from "./state.ts";

export type { DevRoutesState, RemoteRef } from "./state.ts";

/** Most a caller may ask runsync to wait with `?wait=<ms>`: one hour. */
export const MAX_SYNC_WAIT_MS = 3_600_000;

async function readText(event: H3Event): Promise<string> {
  return event.req.text();
}

/**
 * A failed job as the dev server answers it: `error` is `error_type: error_message` and the worker's
 * traceback its own field, not JSON text inside a string (the platform keeps its shape:
 * core/client/job-error.ts). A plain message stays as the platform gave it.
 */
export function shownJob(job: Job): Job & { traceback?: string } {
  const view = jobErrorView(job.error);
  if (!view || view.type === undefined) return job;
  return { ...job, error: view.summary, ...(view.traceback ? { traceback: view.traceback } : {}) };
}

/** `log` hears the errors that are not ours (answered 500). */
export function createDevApp(state: DevRoutesState, log?: (line: string) => void): H3 {
  const app = new H3({ silent: true, onError: onDevRouteError(log) });

  app.get("/", () => json(200, state.health()));

  app.get("/openapi.json", (event) => json(200, generateOpenApi(state.manifest(), { serverUrl: event.url.origin, table: state.table() })));

  app.get("/docs", () => new Response(docsHtml(state.manifest().app), { headers: { "content-type": "text/html; charset=utf-8" } }));

  app.get("/docs/:asset", async (event) => {
    const name = event.context.params?.asset ?? "";
    const asset = await readDocsAsset(name);
    if (!asset) throw errors.NOT_FOUND("Docs asset", name);
    return new Response(new Uint8Array(asset.body), { headers: { "content-type": asset.type, "cache-control": "public, max-age=3600" } });
  });

  app.get("/metrics", async () => {
    const res = await state.metrics();
    return new Response(await res.text(), { status: res.status, headers: { "content-type": res.headers.get("content-type") ?? "text/plain" } });
  });

  app.all(`${LIVE_PROXY_PREFIX}/**`, (event) => handleLiveProxy(state, event));

  app.all("/**", (event) => dispatch(state, event));

  return app;
}

async function dispatch(state: DevRoutesState, event: H3Event): Promise<Response> {
  const method = event.req.method.toUpperCase();
  const pathname = event.url.pathname;
  const table = state.table();
  const resolved = resolveRoute(table, method, pathname);

  if (resolved.kind === "error") throw resolved.error;

  if (resolved.kind === "qb-run") {
    const parsed = parseRunsyncBody(await readText(event));
    if (!parsed.ok) throw errors.BAD_REQUEST(parsed.message);
    const waitParam = event.url.searchParams.get("wait");
    let timeoutMs = state.syncTimeoutMs;
    if (waitParam !== null) {
      const wait = Number(waitParam);
      if (!Number.isFinite(wait) || wait < 0) throw errors.BAD_REQUEST("?wait must be a number of milliseconds.");
      timeoutMs = Math.min(wait, MAX_SYNC_WAIT_MS);
    }
    const remote = await state.ensure(resolved.target.endpoint);
    const { job, httpStatus } = await state.runsync(remote, parsed.input, timeoutMs);
    const status = runsyncStatus(job, httpStatus);
    if (status === 202) {
      const base = `${event.url.origin}/${preferredAlias(table, resolved.target.module)}`;
      const several = (table.modules.get(resolved.target.module)?.qb.length ?? 0) > 1;
      const statusUrl = `${base}${several ? `/${resolved.target.function}` : ""}/status/${encodeURIComponent(job.id)}`;
      return json(202, { ...job, statusUrl }, { location: statusUrl });
    }
    return json(status, shownJob(job));
  }

  if (resolved.kind === "qb-status") {
    const remote = await state.ensure(resolved.target.endpoint);
    const { job, httpStatus } = await state.status(remote, resolved.jobId);
    return json(runsyncStatus(job, httpStatus) === 400 ? 400 : 200, shownJob(job));
  }

  // Load-balanced route: forward the path below the module as sent (its escapes untouched).
  const raw = pathname.split("/").slice(2).join("/");
  const path = `/${raw}${event.url.search}`;
  let body: string | undefined;
  const headers: Record<string, string> = {};
  if (!["GET", "HEAD", "DELETE"].includes(method) || event.req.headers.get("content-length")) {
    const text = await readText(event);
    if (text !== "") {
      // Routes take JSON (spec 4.3). A body sent without a type, or as text/plain (curl -d, fetch
      // with a string), is read as JSON; another explicit type is forwarded untouched.
      const sent = event.req.headers.get("content-type") ?? "";
      const asJson = sent === "" || sent.includes("json") || sent.startsWith("text/plain");
      const parsed = asJson ? parseJsonBody(text) : undefined;
      if (parsed && !parsed.ok) throw errors.BAD_REQUEST(parsed.message);
      body = text;
      headers["content-type"] = asJson ? "application/json" : sent;
    }
  }
  const remote = await state.ensure(resolved.target.endpoint);
  return lbAnswerResponse(await state.lbRequest(remote, method, path, body, headers));
}
