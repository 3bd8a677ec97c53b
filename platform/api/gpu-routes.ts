/**
 * GET /platform/gpus (the platform's key): the machine's GPUs, the worker and endpoint holding each,
 * and the workers waiting for one (`svc platform status`). docs/platform.md, "GPUs".
 */
import type { H3 } from "h3";
import type { PlatformContext } from "../context.ts";
import { json } from "./_http.ts";

export const GPUS_ROUTE = "/platform/gpus";

export function registerGpuRoutes(app: H3, ctx: PlatformContext): void {
  const name = (endpointId: string) => ctx.store.endpoints.get(endpointId)?.name ?? null;
  app.get(GPUS_ROUTE, async () => {
    const status = await ctx.supervisor.gpus.status();
    return json(200, {
      gpus: status.gpus.map((gpu) => ({ ...gpu, workers: gpu.workers.map((w) => ({ ...w, endpointName: name(w.endpointId) })) })),
      waiting: status.waiting.map((w) => ({ ...w, endpointName: name(w.endpointId) })),
    });
  });
}
