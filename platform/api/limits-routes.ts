/**
 * GET /platform/limits (the platform's key): what this machine enforces on workers (cgroup
 * version and controllers, or why none), the platform's settings over the flavours, and each live
 * worker's limits and memory in use (`svc platform status`). docs/platform.md, "Resources".
 */
import type { H3 } from "h3";
import type { PlatformContext } from "../context.ts";
import { json } from "./_http.ts";

export const LIMITS_ROUTE = "/platform/limits";

export function registerLimitsRoutes(app: H3, ctx: PlatformContext): void {
  app.get(LIMITS_ROUTE, () => {
    const { supervisor, store, options } = ctx;
    const { version, controllers, why } = supervisor.resources.support;
    const workers = [...supervisor.workers.values()]
      .filter((w) => w.limits && !w.exited)
      .map((w) => ({
        workerId: w.id,
        endpointName: store.endpoints.get(w.endpointId)?.name ?? null,
        limits: w.limits,
        memory: w.cgroup?.memoryUsage() ?? null,
      }));
    return json(200, { cgroups: { version, controllers, ...(why && { why }) }, settings: options.workerLimits, isolation: options.isolation, workers });
  });
}
