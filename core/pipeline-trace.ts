/**
 * A build's profile as OpenTelemetry spans (docs/observability.md, "Build traces"), in the manner of
 * webpack's ProfilingPlugin: one span for the run (`svc build`, `svc deploy`), one per stage (each
 * hook's call), and under it one per plugin tap, so that a slow plugin shows in Jaeger. Interceptors
 * only: no plugin and no stage knows about it, and without OTLP configured none is installed.
 */
import type { Context, Span } from "@opentelemetry/api";
import type { Otel } from "./otel.ts";
import type { PipelineHooks } from "./types.ts";

type Tap = { type: "sync" | "async" | "promise"; name: string; fn: (...args: unknown[]) => unknown };
type Interceptable = { intercept(interceptor: object): void };

export interface PipelineTrace {
  /** Ends the run's span (failed when `error` is given) and sends the spans. */
  end(error?: unknown): Promise<void>;
}

export function tracePipeline(hooks: PipelineHooks, otel: Otel, runName: string, traceparent = process.env.TRACEPARENT): PipelineTrace {
  const { api, tracer } = otel;
  const root = tracer.startSpan(runName, { attributes: { "svc.command": runName } }, otel.parentOf(traceparent));
  const under = (span: Span): Context => api.trace.setSpan(api.ROOT_CONTEXT, span);
  let stage: { span: Span; context: Context } | undefined;
  const endStage = (error?: unknown) => {
    if (!stage) return;
    if (error) stage.span.setStatus({ code: api.SpanStatusCode.ERROR, message: String((error as Error)?.message ?? error) });
    stage.span.end();
    stage = undefined;
  };
  for (const [hookName, hook] of Object.entries(hooks) as Array<[string, Interceptable]>) {
    hook.intercept({
      call() {
        endStage();
        const span = tracer.startSpan(`stage ${hookName}`, { attributes: { "svc.stage": hookName } }, under(root));
        stage = { span, context: under(span) };
      },
      done: () => endStage(),
      result: () => endStage(),
      error: (error: unknown) => endStage(error),
      register: (tap: Tap): Tap => ({ ...tap, fn: timed(tap, hookName) }),
    });
  }

  /** The tap's function, each call inside a span named after its plugin. */
  function timed(tap: Tap, hookName: string): Tap["fn"] {
    const original = tap.fn;
    const start = () => tracer.startSpan(tap.name, { attributes: { "svc.plugin": tap.name, "svc.hook": hookName } }, stage?.context ?? under(root));
    const finish = (span: Span, error?: unknown) => {
      if (error) span.setStatus({ code: api.SpanStatusCode.ERROR, message: String((error as Error)?.message ?? error) });
      span.end();
    };
    switch (tap.type) {
      case "promise":
        return (...args) => {
          const span = start();
          let result: unknown;
          try {
            result = original(...args);
          } catch (error) {
            finish(span, error);
            throw error;
          }
          const done = result as Promise<unknown>;
          if (!done || typeof done.then !== "function") return done; // the PLUGIN_HOOK_NOT_PROMISE guard answers this
          return done.then(
            (value) => {
              finish(span);
              return value;
            },
            (error: unknown) => {
              finish(span, error);
              return Promise.reject(error);
            },
          );
        };
      case "async":
        return (...args) => {
          const span = start();
          const callback = args.pop() as (error?: unknown, result?: unknown) => void;
          return original(...args, (error?: unknown, result?: unknown) => {
            finish(span, error);
            callback(error, result);
          });
        };
      default:
        return (...args) => {
          const span = start();
          let failed: unknown;
          try {
            return original(...args);
          } catch (error) {
            failed = error;
            throw error;
          } finally {
            finish(span, failed);
          }
        };
    }
  }

  return {
    async end(error) {
      endStage(error);
      if (error) root.setStatus({ code: api.SpanStatusCode.ERROR, message: String((error as Error)?.message ?? error) });
      root.end();
      await otel.shutdown();
    },
  };
}
