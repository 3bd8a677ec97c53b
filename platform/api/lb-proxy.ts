/**
 * Load-balanced endpoints: requests to `/lb/<endpoint_id>/...` or with `Host: <endpoint_id>.localhost`
 * are proxied to a ready worker (GET /ping answered 200), round robin. With none ready, one is
 * started and the request waits for it up to `lbReadyWaitMs`, then answers 503 NO_WORKER_READY
 * (with the reason when the endpoint's workers exit before they are ready).
 */
import type { H3Event } from "h3";
import { Readable } from "node:stream";
import { request } from "undici";
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import type { WorkerInfo } from "../workers/worker-info.ts";
import { lbTarget } from "../workers/lb-target.ts";
import { JsonDepthGuard } from "./json-depth-guard.ts";

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "authorization",
]);
/** Bodies without a length are buffered (the worker's HTTP server reads Content-Length only). */
const MAX_BUFFERED_BODY = 20_000_000;

export function createLbProxy(ctx: PlatformContext) {
  const { store, supervisor, autoscaler, options } = ctx;
  const turn = new Map<string, number>();

  const readyWorkers = (endpointId: string) => supervisor.forEndpoint(endpointId).filter((w) => w.ready && w.lbPort && supervisor.takesWork(w) && !w.exited);

  async function pick(endpointId: string, name: string, signal: AbortSignal): Promise<WorkerInfo> {
    const deadline = Date.now() + options.lbReadyWaitMs;
    for (;;) {
      const ready = readyWorkers(endpointId);
      if (ready.length > 0) {
        const i = (turn.get(endpointId) ?? 0) % ready.length;
        turn.set(endpointId, i + 1);
        return ready[i]!;
      }
      const remaining = deadline - Date.now();
      const endpoint = store.endpoints.get(endpointId);
      const unrunnable = endpoint && supervisor.problems.unrunnable(endpoint); // no worker can ever start: no wait
      if (remaining <= 0 || signal.aborted || unrunnable) {
        throw errors.NO_WORKER_READY(name, endpoint && supervisor.problems.problem(endpoint)?.error_message); // why, when the workers exit early
      }
      autoscaler.lbWaiting.set(endpointId, (autoscaler.lbWaiting.get(endpointId) ?? 0) + 1);
      try {
        autoscaler.kick(endpointId);
        await supervisor.waitReady(endpointId, Math.min(remaining, 1000), signal);
      } finally {
        autoscaler.lbWaiting.set(endpointId, (autoscaler.lbWaiting.get(endpointId) ?? 1) - 1);
      }
    }
  }

  return async function proxy(event: H3Event, endpointId: string, path: string): Promise<Response> {
    const endpoint = store.endpoints.get(endpointId);
    if (!endpoint) throw errors.NOT_FOUND("Endpoint", endpointId);
    if (endpoint.type !== "LB") throw errors.BAD_REQUEST(`Endpoint "${endpoint.name}" is queue-based: use ${ctx.baseUrl()}/v2/${endpoint.id}/run or /runsync.`);
    const worker = await pick(endpoint.id, endpoint.name, event.req.signal);
    const guard = new JsonDepthGuard();
    const { method, headers, body } = await forwardedRequest(event, guard);
    worker.inFlight++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      worker.inFlight--;
      if (worker.inFlight === 0) supervisor.released(worker.id);
    };
    try {
      const target = lbTarget(worker, path);
      const res = await request(target.url, {
        dispatcher: target.dispatcher,
        method: method as "GET",
        headers,
        body,
        headersTimeout: endpoint.executionTimeoutMs,
        bodyTimeout: endpoint.executionTimeoutMs,
        signal: event.req.signal,
      });
      const out = answerHeaders(res.headers);
      if (res.statusCode === 204 || res.statusCode === 304 || method === "HEAD") {
        await res.body.dump();
        release();
        return new Response(null, { status: res.statusCode, headers: out });
      }
      res.body.once("close", release);
      res.body.once("error", release);
      return new Response(Readable.toWeb(res.body) as unknown as ReadableStream, { status: res.statusCode, headers: out });
    } catch (error) {
      release();
      if (guard.refused) throw guard.refused; // the body nested too deep: stopped before its end reached the worker
      if (event.req.signal.aborted) throw error;
      throw errors.PLATFORM_ERROR(`${method} ${path} on worker ${worker.id}`, (error as Error).message);
    }
  };
}

/** The client's request as the worker gets it: end-to-end headers, and a body with a length, within the JSON nesting limit. */
async function forwardedRequest(
  event: H3Event,
  guard: JsonDepthGuard,
): Promise<{ method: string; headers: Record<string, string>; body: Readable | Buffer | undefined }> {
  const headers: Record<string, string> = {};
  event.req.headers.forEach((value, key) => {
    if (!HOP_BY_HOP.has(key)) headers[key] = value;
  });
  headers["x-forwarded-host"] = event.req.headers.get("host") ?? "";
  const method = event.req.method;
  const hasBody = method !== "GET" && method !== "HEAD" && event.req.body !== null;
  let body: Readable | Buffer | undefined;
  if (hasBody && headers["content-length"] !== undefined)
    body = Readable.fromWeb(event.req.body as import("node:stream/web").ReadableStream)
      .on("error", (error) => guard.destroy(error))
      .pipe(guard);
  else if (hasBody) {
    const bytes = Buffer.from(await event.req.arrayBuffer());
    if (bytes.length > MAX_BUFFERED_BODY) throw errors.PAYLOAD_TOO_LARGE(MAX_BUFFERED_BODY);
    if (!guard.scan(bytes)) throw guard.refused!;
    body = bytes;
    headers["content-length"] = String(bytes.length);
  }
  return { method, headers, body };
}

/** The worker's answer headers without the hop-by-hop ones. */
function answerHeaders(headers: Record<string, string | string[] | undefined>): Headers {
  const out = new Headers();
  for (const [key, value] of Object.entries(headers)) {
    if (HOP_BY_HOP.has(key) || value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.append(key, v);
  }
  return out;
}
