/**
 * `GET /metrics`: the Prometheus text exposition (../telemetry/metrics.ts; docs/observability.md).
 * Behind the platform's key like every route (app.ts's middleware; a worker's key is refused);
 * 404 when the platform runs with metrics off (SVC_METRICS=0).
 */
import type { H3 } from "h3";
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";

export const METRICS_ROUTE = "/metrics";

export function registerMetricsRoute(app: H3, ctx: PlatformContext): void {
  app.get(METRICS_ROUTE, async () => {
    const metrics = ctx.telemetry?.metrics;
    if (!metrics) throw errors.NOT_FOUND("Route", "GET /metrics (metrics are off: the platform was started with SVC_METRICS=0)");
    const { contentType, text } = await metrics.scrape();
    return new Response(text, { status: 200, headers: { "content-type": contentType } });
  });
}
