/** The h3 app: auth, load-balancer host routing, the route families, 404 for everything else. */
import type { IncomingMessage, ServerResponse } from "node:http";
import { H3, type H3Event } from "h3";
import { errors, isSvcError } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import type { ResolverHooks } from "../graphql/resolvers.ts";
import { createLbProxy } from "./lb-proxy.ts";
import { errorReply, json, onRouteError, presentedKey } from "./_http.ts";
import { registerQueueRoutes } from "./queue-routes.ts";
import { registerWorkerRoutes } from "./worker-routes.ts";
import { registerStockWorkerRoutes } from "./stock-worker-routes.ts";
import { registerGraphql } from "./graphql.ts";
import { ARTIFACT_ROUTE } from "../artifacts/receive.ts";
import { registerUploadRoutes } from "./uploads.ts";
import { registerFileRoutes } from "./files.ts";
import { registerGpuRoutes } from "./gpu-routes.ts";
import { registerLimitsRoutes } from "./limits-routes.ts";
import { registerClusterRoutes } from "./cluster-routes.ts";
import { registerRemoteWorkerRoutes } from "./remote-worker-routes.ts";
import type { RateLimiter } from "./rate-limit.ts";
import { createHotPath } from "./hot-routes.ts";
import { registerMetricsRoute } from "./metrics-route.ts";
import { endpointRefusal, scopeRefusal } from "./worker-scope.ts";
import { registerConsoleRoutes } from "../console/routes.ts";
import type { TimeSeries } from "../console/timeseries.ts";
import { createKeyAccess, LB_HOST_RULE, type KeyAccess } from "./key-access.ts";
import { ROUTE_RULES } from "../keys/rules.ts";

/** The rule key of the route h3 matched (`* /**` when none did): `METHOD /pattern`, `*` for any method. */
const routeOf = (event: H3Event): string => {
  const route = event.context.matchedRoute as { method?: string; route?: string } | undefined;
  return route ? `${route.method || "*"} ${route.route}` : "* /**";
};
/** What a route acts on: its endpoint, or an output file. */
const targetOf = (event: H3Event): string | undefined => event.context.params?.endpoint ?? event.context.params?.id;

const LB_HOST = /^([a-z0-9][a-z0-9_-]*)\.localhost(?::\d+)?$/i;

/** Routes that check their own credentials (worker token; upload token or key). */
const selfAuthenticated = (path: string) => path.startsWith("/v2/_worker/") || path.startsWith(`${ARTIFACT_ROUTE}/`);

export interface Api {
  app: H3;
  limiter: RateLimiter;
  /** Answers runsync and jobs-done without h3 (hot-routes.ts); false hands the request to `app`. */
  hot: (req: IncomingMessage, res: ServerResponse) => boolean;
  /** The holder of a presented key (the platform's or a named one), for what keys requests by identity. */
  identify: KeyAccess["identify"];
}

export function createApi(ctx: PlatformContext, series: TimeSeries, hooks: ResolverHooks): Api {
  // Every answer is counted by route pattern and code (docs/observability.md); the hot path counts its own.
  const onResponse = (response: Response, event: H3Event) =>
    ctx.telemetry?.httpRequest(event.context.matchedRoute?.route ?? "(none)", event.req.method, response.status);
  const app = new H3({ silent: true, onError: onRouteError(ctx.options.log), onResponse });
  const proxy = createLbProxy(ctx);
  const access = createKeyAccess(ctx);

  const proxyByHost = (event: H3Event, endpointId: string) => proxy(event, endpointId, event.url.pathname + event.url.search);
  // Synchronous, and undefined passes the request on to the routes: no promise per request.
  app.use((event: H3Event) => {
    const path = event.url.pathname;
    if (selfAuthenticated(path)) return undefined;
    const host = LB_HOST.exec(event.req.headers.get("host") ?? "")?.[1]?.toLowerCase();
    const route = host ? LB_HOST_RULE : routeOf(event);
    if (ROUTE_RULES[route]?.roles === "none") return undefined; // a page that asks no key (rules.ts)
    const caller = access.caller(presentedKey(event));
    const error = isSvcError(caller)
      ? caller
      : caller.workerScope
        ? scopeRefusal(ctx.workerKeys, caller.workerScope, event, host) // a worker's key: its scope's routes only
        : access.routeRefusal(caller.identity, route, host ?? targetOf(event), `${event.req.method} ${path}`);
    // GraphQL clients read `errors` (the same body beside them); every other route's refusal goes to onError.
    if (error && path === "/graphql")
      return json(error.status, { error: error.message, code: error.code, errors: [{ message: error.message, extensions: { code: error.code } }] });
    if (error) throw error;
    if (!isSvcError(caller)) Object.assign(event.context, caller);
    return host ? proxyByHost(event, host) : undefined;
  });

  const lb = (event: H3Event) => {
    const id = event.context.params?.endpoint ?? "";
    const rest = event.url.pathname.slice(`/lb/${id}`.length) || "/";
    return proxy(event, id, rest + event.url.search);
  };
  app.all("/lb/:endpoint", lb);
  app.all("/lb/:endpoint/**", lb);

  const { jobsDone } = registerWorkerRoutes(app, ctx);
  registerStockWorkerRoutes(app, ctx);
  registerUploadRoutes(app, ctx);
  registerFileRoutes(app, ctx);
  registerGpuRoutes(app, ctx);
  registerLimitsRoutes(app, ctx);
  registerClusterRoutes(app, ctx);
  registerRemoteWorkerRoutes(app, ctx);
  registerGraphql(app, ctx, hooks);
  registerConsoleRoutes(app, ctx, series);
  registerMetricsRoute(app, ctx);
  const { limiter, runsync } = registerQueueRoutes(app, ctx);

  app.all("/**", (event: H3Event) => {
    throw errors.NOT_FOUND("Route", `${event.req.method} ${event.url.pathname}`);
  });
  const hot = createHotPath({
    runsync,
    jobsDone,
    refusal: (key, endpointId) => {
      const caller = access.caller(key);
      const what = `POST /v2/${endpointId}/runsync`;
      const error = isSvcError(caller)
        ? caller
        : caller.workerScope
          ? endpointRefusal(ctx.workerKeys, caller.workerScope, endpointId, what)
          : access.routeRefusal(caller.identity, "POST /v2/:endpoint/runsync", endpointId, what);
      return error && errorReply(error);
    },
    isLbHost: (host) => LB_HOST.test(host ?? ""),
    answered: (route, code) => ctx.telemetry?.httpRequest(route, "POST", code),
    log: ctx.options.log,
  });
  return { app, limiter, hot, identify: access.identify };
}
