/**
 * svc:lb-routes — checks the routes of load-balanced endpoints: a path starts with '/', each
 * METHOD + path appears once per endpoint, and the worker runtime's own paths (RESERVED_PATHS of
 * core/endpoint-schema.ts) stay free.
 * Taps `group` after svc:group-endpoints (registration order in plugins/index.ts).
 */
import { RESERVED_PATHS } from "../core/endpoint-schema.ts";
import { errors } from "../core/errors.ts";
import type { EndpointSpec, SvcPlugin } from "../core/types.ts";

export const PLUGIN_NAME = "svc:lb-routes";

export function lbRoutes(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.group.tapPromise(PLUGIN_NAME, async (endpoints) => {
        checkRoutes(endpoints);
        return endpoints;
      });
    },
  };
}

/** `/a/` and `/a` reach the same handler in most routers: compare without the trailing slash. */
const normalisePath = (path: string): string => (path.length > 1 ? path.replace(/\/+$/, "") : path);

export function checkRoutes(endpoints: readonly EndpointSpec[]): void {
  for (const endpoint of endpoints) {
    if (endpoint.type !== "LB") continue;
    const seen = new Set<string>();
    for (const fn of endpoint.functions) {
      if (!fn.route) continue;
      const loc = { file: fn.file, line: fn.line };
      const { method, path } = fn.route;
      if (!path.startsWith("/")) {
        throw errors.ENDPOINT_ARGUMENT_INVALID(loc, `route path "${path}" of ${fn.name} must start with '/' (like "/${path}").`);
      }
      const normal = normalisePath(path);
      if ((RESERVED_PATHS as readonly string[]).includes(normal)) throw errors.RESERVED_ROUTE(endpoint.name, path, loc);
      const key = `${method} ${normal}`;
      if (seen.has(key)) throw errors.DUPLICATE_ROUTE(endpoint.name, `${method} ${path}`, loc);
      seen.add(key);
    }
  }
}
