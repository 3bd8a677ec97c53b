/**
 * OpenTelemetry traces over OTLP/HTTP, on only when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set (docs/observability.md). The SDK is loaded then and
 * only then, by dynamic import: a run without it pays nothing, not even the modules' load. The
 * platform (one trace per job) and the build (one span per stage and plugin tap) both start here.
 */
import type { Context, Tracer } from "@opentelemetry/api";

export interface Otel {
  tracer: Tracer;
  api: typeof import("@opentelemetry/api");
  /** The context of a W3C `traceparent` header, or undefined when it is absent or malformed. */
  parentOf(traceparent: string | undefined | null): Context | undefined;
  /** Sends what is buffered, then stops. */
  shutdown(): Promise<void>;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export const tracingConfigured = (env: NodeJS.ProcessEnv = process.env): boolean =>
  Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) && env.OTEL_SDK_DISABLED !== "true";

/** A tracer exporting to the configured OTLP endpoint as `service` (OTEL_SERVICE_NAME overrides), or undefined when none is configured. */
export async function startOtel(service: string, env: NodeJS.ProcessEnv = process.env): Promise<Otel | undefined> {
  if (!tracingConfigured(env)) return undefined;
  const [api, sdk, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/sdk-trace"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
  ]);
  const provider = new sdk.TracerProvider({
    resource: resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME || service }),
    // The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT (adding /v1/traces) and its headers itself.
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter: new OTLPTraceExporter(), scheduledDelayMillis: 500, maxQueueSize: 8192 })],
  });
  const parentOf = (traceparent: string | undefined | null): Context | undefined => {
    const m = traceparent ? TRACEPARENT.exec(traceparent.trim().toLowerCase()) : null;
    if (!m || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return undefined;
    return api.trace.setSpanContext(api.ROOT_CONTEXT, { traceId: m[1]!, spanId: m[2]!, traceFlags: Number.parseInt(m[3]!, 16), isRemote: true });
  };
  return {
    tracer: provider.getTracer("svc"),
    api,
    parentOf,
    shutdown: () => provider.shutdown(),
  };
}

/** The W3C `traceparent` header naming `span` as the parent of whatever the holder of the header does. */
export function traceparentOf(span: { spanContext(): { traceId: string; spanId: string; traceFlags: number } }): string {
  const c = span.spanContext();
  return `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 1 ? 1 : 0).toString(16).padStart(2, "0")}`;
}
