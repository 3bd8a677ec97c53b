/**
 * The two requests every queue job makes — a client's `POST /v2/<endpoint>/runsync` and a local
 * worker's `POST /v2/_worker/<worker>/jobs-done` — are served here, straight from Node's request,
 * not by h3 (docs/platform.md, "Hot path"): h3's request, event and response objects cost a no-op
 * runsync about 8 % of its round trip (interleaved A/B, 6 pairs). The routes' logic lives with
 * their families (QueueRoutes.runsync, WorkerRoutes.jobsDone) and is written against `Exchange`,
 * so only the transport is here. Path parameters are taken as sent, as h3's router does. Every
 * other request, and runsync on a load-balancer host (which the h3 middleware proxies), goes to h3.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { keyOf, onResponseClosed, readNodeText, type Exchange, type Reply } from "./_http.ts";
import { readResultLines } from "./result-lines.ts";

const RUNSYNC = /^\/v2\/([^/?_][^/?]*)\/runsync(?:\?(.*))?$/;
const JOBS_DONE = /^\/v2\/_worker\/([^/?]+)\/jobs-done(?:\?(.*))?$/;
/** The routes' patterns, as h3 names its own in the metrics. */
const RUNSYNC_ROUTE = "/v2/:endpoint/runsync";
const JOBS_DONE_ROUTE = "/v2/_worker/:worker/jobs-done";
const HEADERS = { "content-type": "application/json; charset=utf-8" };

export interface HotRoutes {
  runsync(endpointId: string, ex: Exchange): Promise<Reply>;
  jobsDone(workerId: string, ex: Exchange): Promise<Reply>;
  /** runsync's key check: undefined lets the request through, else the refusal (a worker's token is checked by jobsDone). */
  refusal(key: string | undefined, endpointId: string): Reply | undefined;
  /** Requests for a load-balancer host are proxied by h3's middleware. */
  isLbHost(host: string | undefined): boolean;
  /** Counts an answer by route pattern and code (../telemetry/metrics.ts). */
  answered(route: string, code: number): void;
  log(line: string): void;
}

/** A Node request listener's front: true when it answered the request, false to hand it to h3. */
export function createHotPath(routes: HotRoutes): (req: IncomingMessage, res: ServerResponse) => boolean {
  const exchange = (req: IncomingMessage, res: ServerResponse, query: string | undefined): Exchange => {
    let params: URLSearchParams | undefined;
    return {
      key: () => keyOf(req.headers.authorization),
      query: (name) => (query ? (params ??= new URLSearchParams(query)).get(name) : null),
      text: (limit) => readNodeText(req, limit),
      resultLines: (limit) => readResultLines(req, limit),
      onGone: (fn) => onResponseClosed(res, fn),
      traceparent: () => req.headers.traceparent as string | undefined, // Node joins a repeated unknown header into one string
    };
  };
  const send = (res: ServerResponse, reply: Reply, route: string) => {
    routes.answered(route, reply.status);
    if (res.destroyed) return; // the client went away meanwhile
    try {
      res.writeHead(reply.status, reply.headers ? { ...HEADERS, ...reply.headers } : HEADERS).end(reply.text);
    } catch (error) {
      routes.log(`answering ${reply.status} failed: ${(error as Error)?.stack ?? error}`);
      res.destroy();
    }
  };

  return (req, res) => {
    if (req.method !== "POST" || !req.url) return false;
    const done = JOBS_DONE.exec(req.url);
    if (done) {
      void routes.jobsDone(done[1]!, exchange(req, res, done[2])).then((reply) => send(res, reply, JOBS_DONE_ROUTE));
      return true;
    }
    const runsync = RUNSYNC.exec(req.url);
    if (!runsync || routes.isLbHost(req.headers.host)) return false;
    const refused = routes.refusal(keyOf(req.headers.authorization), runsync[1]!);
    if (refused) {
      req.resume();
      send(res, refused, RUNSYNC_ROUTE);
      return true;
    }
    void routes.runsync(runsync[1]!, exchange(req, res, runsync[2])).then((reply) => send(res, reply, RUNSYNC_ROUTE));
    return true;
  };
}
