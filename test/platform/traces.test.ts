/**
 * OpenTelemetry traces (docs/observability.md) received by a real Jaeger (v1.76.0, built by
 * scripts/setup.sh; in-memory storage, its OTLP/HTTP receiver and query API on free ports):
 * - a caller's runsync sent with a W3C `traceparent` is one trace holding the caller's job (accepted,
 *   queued, cold start, run) and, under its run, the job of the endpoint it called from its worker;
 * - `svc deploy` with OTLP configured is one trace with one span per pipeline stage, and the
 *   plugins' taps under them.
 */
import { randomBytes } from "node:crypto";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { createPlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import { STAGES } from "../../core/pipeline.ts";
import { buildFixtureArtifact, deploy, startTestPlatform, waitFor, type TestPlatform } from "./_support.ts";
import { JAEGER, requireTool, skipWithout } from "../_support/tools.ts";
import { startJaeger, type RunningJaeger } from "../_support/jaeger.ts";
import { saveEnv } from "../_support/env.ts";

interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: Array<{ refType: string; spanID: string }>;
  processID: string;
}
interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string }>;
}

const restoreOtelEnv = saveEnv("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME");

let jaeger: RunningJaeger | undefined;
let queryUrl: string;
let p: TestPlatform | undefined;

describe.skipIf(skipWithout(JAEGER))("traces in a real Jaeger", () => {
  beforeAll(async () => {
    const bin = requireTool(JAEGER, "jaeger", "go install github.com/jaegertracing/jaeger/cmd/jaeger@v1.76.0");
    jaeger = await startJaeger(bin);
    queryUrl = jaeger.queryUrl;
    // The platform (in this process) and the deploy read these when they start.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = jaeger.otlpUrl;
    delete process.env.OTEL_SERVICE_NAME;
    p = await startTestPlatform();
  }, 120_000);

  afterAll(async () => {
    await p?.dispose();
    await jaeger?.stop();
    restoreOtelEnv();
  });

  /** The trace once it holds spans that satisfy `complete`. */
  const traceWhen = (traceId: string, complete: (t: JaegerTrace) => boolean) =>
    waitFor(
      `trace ${traceId} in jaeger`,
      async () => {
        const r = await fetch(`${queryUrl}/api/traces/${traceId}`);
        if (!r.ok) return undefined;
        const t = ((await r.json()) as { data: JaegerTrace[] }).data[0];
        return t && complete(t) ? t : undefined;
      },
      30_000,
      250,
    );

  it("holds a caller's job and the job it called from its worker under the caller's trace id", async () => {
    const platform = p!;
    const deployed = await deploy(platform, await buildFixtureArtifact(), [
      { name: "work", workersMax: 1 },
      { name: "caller", workersMax: 1 },
      { name: "api", type: "LB", workersMax: 1 },
    ]);
    const traceId = randomBytes(16).toString("hex");
    const clientSpan = randomBytes(8).toString("hex");
    const r = await fetch(`${platform.url}/v2/${deployed.endpoints.caller!.id}/runsync`, {
      method: "POST",
      headers: { authorization: `Bearer ${platform.apiKey}`, "content-type": "application/json", traceparent: `00-${traceId}-${clientSpan}-01` },
      body: JSON.stringify({ input: { value: "x" } }),
    });
    expect(((await r.json()) as { status: string }).status).toBe("COMPLETED");

    const named = (t: JaegerTrace, name: string) => t.spans.filter((s) => s.operationName === name);
    const trace = await traceWhen(traceId, (t) => named(t, "job caller").length === 1 && named(t, "job work").length === 1);
    const byId = new Map(trace.spans.map((s) => [s.spanID, s]));
    const parentOf = (s: JaegerSpan) => byId.get(s.references.find((ref) => ref.refType === "CHILD_OF")?.spanID ?? "");
    const caller = named(trace, "job caller")[0]!;
    const callee = named(trace, "job work")[0]!;
    // The caller's job hangs off the client's span; its steps are its children.
    expect(caller.references).toContainEqual(expect.objectContaining({ refType: "CHILD_OF", spanID: clientSpan }));
    const steps = trace.spans.filter((s) => parentOf(s) === caller).map((s) => s.operationName);
    expect(steps).toEqual(expect.arrayContaining(["queued", "cold start", "run"]));
    // The callee's job is a child of the caller's run: the worker carried the context into its call.
    const calleeParent = parentOf(callee)!;
    expect(calleeParent.operationName).toBe("run");
    expect(parentOf(calleeParent)).toBe(caller);
    expect(trace.processes[caller.processID]!.serviceName).toBe("svc-platform");
  }, 180_000);

  it("traces `svc deploy`: one span per pipeline stage, the plugins' taps under them", async () => {
    const platform = p!;
    const root = await mkdtemp(join(tmpdir(), "svc-traced-deploy-"));
    try {
      await cp(new URL("../../fixtures/deploy-app/", import.meta.url).pathname, root, { recursive: true });
      const client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
      await runDeploy({ root, client, logger: createLogger("error", () => {}) });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
    const found = await waitFor(
      "the deploy's trace in jaeger",
      async () => {
        const r = await fetch(`${queryUrl}/api/traces?service=svc&operation=${encodeURIComponent("svc deploy")}&limit=5`);
        return r.ok ? ((await r.json()) as { data: JaegerTrace[] }).data[0] : undefined;
      },
      30_000,
      250,
    );
    const trace = await traceWhen(found.traceID, (t) => t.spans.some((s) => s.operationName === "stage configure"));
    const stageSpans = trace.spans.filter((s) => s.operationName.startsWith("stage "));
    const byName = new Map(stageSpans.map((s) => [s.operationName, s]));
    for (const stage of STAGES)
      expect(
        stageSpans.filter((s) => s.operationName === `stage ${stage}`),
        stage,
      ).toHaveLength(1);
    const run = trace.spans.find((s) => s.operationName === "svc deploy")!;
    for (const s of stageSpans) expect(s.references[0]?.spanID).toBe(run.spanID);
    const underPack = trace.spans.filter((s) => s.references[0]?.spanID === byName.get("stage pack")!.spanID).map((s) => s.operationName);
    expect(underPack).toContain("svc:tar-pack");
  }, 180_000);
});
