/**
 * `GET /metrics`: the Prometheus text exposition (../telemetry/metrics.ts; docs/observability.md).
 * Behind the platform's key like every route (app.ts's middleware; a worker's key is refused).
 */
import type { H3 } from "h3";
import type { PlatformContext } from "../context.ts";

export const METRICS_ROUTE = "/metrics";

export function registerMetricsRoute(app: H3, ctx: PlatformContext): void {
  app.get(METRICS_ROUTE, async () => {
    const { contentType, text } = await ctx.telemetry.metrics.scrape();
    return new Response(text, { status: 200, headers: { "content-type": contentType } });
  });
}
