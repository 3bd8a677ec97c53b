/**
 * The console at /console: its page and assets (no data in them: served to anyone, like a sign-in
 * page), and its JSON under CONSOLE_API, which the API's auth middleware lets through only with the
 * platform's key (a worker's key is refused there: 403 KEY_SCOPE). One prefix, so that a role can
 * be given all of it by one rule. docs/console.md.
 */
import { HTTPResponse, type H3, type H3Event } from "h3";
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import type { JobStatus } from "../store/index.ts";
import { consoleAssets } from "./assets.ts";
import type { TimeSeries } from "./timeseries.ts";
import { builds, endpointDetail, JOB_STATUSES, jobs, logs, overview, volumes } from "./views.ts";

export const CONSOLE_PAGE = "/console";
export const CONSOLE_API = "/console/api/";
const ASSETS = "/console/assets/";

/** The page and its assets: nothing the platform holds is in them, so they need no key. */

const SECURITY_HEADERS = {
  "content-security-policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};

const asset = (text: string, type: string) =>
  new HTTPResponse(text, { status: 200, headers: { "content-type": `${type}; charset=utf-8`, "cache-control": "no-cache", ...SECURITY_HEADERS } });

const data = (value: unknown) =>
  new HTTPResponse(JSON.stringify(value), { status: 200, headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" } });

function intParam(event: H3Event, name: string, fallback: number, max: number): number {
  const raw = event.url.searchParams.get(name);
  if (raw === null || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > max) throw errors.BAD_REQUEST(`${name} must be an integer from 0 to ${max}, not "${raw}"`);
  return n;
}

function statusParam(event: H3Event): JobStatus | null {
  const raw = event.url.searchParams.get("status");
  if (!raw) return null;
  if (!JOB_STATUSES.includes(raw as JobStatus)) throw errors.BAD_REQUEST(`status must be one of ${JOB_STATUSES.join(", ")}, not "${raw}"`);
  return raw as JobStatus;
}

export function registerConsoleRoutes(app: H3, ctx: PlatformContext, series: TimeSeries): void {
  const endpointOf = (event: H3Event) => {
    const id = event.context.params?.id ?? "";
    const endpoint = ctx.store.endpoints.get(id);
    if (!endpoint) throw errors.NOT_FOUND("Endpoint", id, "The console's overview lists the endpoints.");
    return endpoint;
  };

  const page = async () => asset((await consoleAssets()).html, "text/html");
  app.get(CONSOLE_PAGE, page);
  app.get(`${CONSOLE_PAGE}/`, page);
  app.get(`${ASSETS}console.js`, async () => asset((await consoleAssets()).js, "text/javascript"));
  app.get(`${ASSETS}console.css`, async () => asset((await consoleAssets()).css, "text/css"));

  const api = CONSOLE_API;
  app.get(`${api}session`, () => data({ ok: true, platform: ctx.baseUrl() }));
  app.get(`${api}overview`, () => data(overview(ctx)));
  app.get(`${api}endpoints/:id`, (event) => data(endpointDetail(ctx, endpointOf(event))));
  app.get(`${api}endpoints/:id/jobs`, (event) => data(jobs(ctx, endpointOf(event).id, statusParam(event), intParam(event, "limit", 50, 500))));
  app.get(`${api}endpoints/:id/logs`, (event) => {
    const after = event.url.searchParams.get("after") ? intParam(event, "after", 0, Number.MAX_SAFE_INTEGER) : undefined;
    const search = event.url.searchParams.get("search")?.trim() || undefined;
    return data(logs(ctx, endpointOf(event).id, { after, search, limit: intParam(event, "limit", 500, 5000) }));
  });
  app.get(`${api}endpoints/:id/series`, (event) => data({ sampleMs: series.sampleMs, points: series.points(endpointOf(event).id) }));
  app.get(`${api}volumes`, async () => data(await volumes(ctx)));
  app.get(`${api}builds`, () => data(builds(ctx)));
}
