/**
 * GET /platform/cluster (the platform's key): where workers run. With the Ray backend, the
 * cluster's nodes (CPUs, GPUs, memory, alive or not) and the workers on each, and those waiting for
 * a place (`svc platform status`); with local processes, just that. docs/platform.md, "Workers on a Ray cluster".
 */
import type { H3 } from "h3";
import type { PlatformContext } from "../context.ts";
import { json } from "./_http.ts";

export const CLUSTER_ROUTE = "/platform/cluster";

export function registerClusterRoutes(app: H3, ctx: PlatformContext): void {
  const name = (endpointId: string) => ctx.store.endpoints.get(endpointId)?.name ?? null;
  const named = (w: { workerId: string; endpointId: string }) => ({ ...w, endpointName: name(w.endpointId) });
  app.get(CLUSTER_ROUTE, async () => {
    const remote = ctx.supervisor.remote;
    if (!remote?.cluster) return json(200, { backend: "local" });
    const view = await remote.cluster(ctx.supervisor.workers.values());
    return json(200, { ...view, nodes: view.nodes.map((n) => ({ ...n, workers: n.workers.map(named) })), unplaced: view.unplaced.map(named) });
  });
}
