/**
 * Cross-endpoint calls in lazy mode (docs/dev-server.md, "Cross-endpoint calls"). A worker finds the
 * URL of the endpoint it calls in its build's manifest (`urls`, read through GraphQL `getBuild`).
 * An endpoint not yet deployed has no platform URL, so the dev server records this route for it:
 * `/_svc/live/<endpoint>/<path>` deploys the endpoint on demand (as a direct call does) and forwards
 * the request to `<its platform URL>/<path>` — runsync and status for queue-based endpoints,
 * execute for load-balanced ones — with the caller's own API key.
 */
import type { H3Event } from "h3";
import { errors } from "../../core/errors.ts";
import { lbAnswerResponse } from "./responses.ts";
import { LIVE_PROXY_PREFIX } from "../live-proxy-url.ts";
import type { DevRoutesState } from "./state.ts";

export async function handleLiveProxy(state: DevRoutesState, event: H3Event): Promise<Response> {
  const [endpoint = "", ...rest] = event.url.pathname.slice(LIVE_PROXY_PREFIX.length + 1).split("/");
  const name = decodeURIComponent(endpoint);
  if (!state.manifest().endpoints[name]) throw errors.NOT_FOUND("Endpoint", name);
  const authorization = event.req.headers.get("authorization");
  // The platform checks the key; the dev server never lends its own to a caller that sent none.
  if (!authorization) throw errors.UNAUTHORIZED();
  const method = event.req.method.toUpperCase();
  const body = ["GET", "HEAD"].includes(method) ? undefined : await event.req.text();
  const headers: Record<string, string> = { authorization };
  const type = event.req.headers.get("content-type");
  if (type) headers["content-type"] = type;
  const remote = await state.ensure(name);
  return lbAnswerResponse(await state.lbRequest(remote, method, `/${rest.join("/")}${event.url.search}`, body || undefined, headers));
}
