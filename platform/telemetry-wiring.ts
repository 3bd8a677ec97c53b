/**
 * Wires the telemetry room (./telemetry/) to what it reads: the endpoints' labels, the queue's and
 * the workers' state for the scrape-time gauges, the volumes' use, the GPUs, and the workers'
 * cold starts for the job traces. The room itself imports none of these (one-way rooms).
 */
import { startOtel, type Otel } from "../core/otel.ts";
import type { Store, EndpointRecord } from "./store/index.ts";
import type { JobQueue } from "./queue/queue.ts";
import type { Supervisor } from "./workers/supervisor.ts";
import { queryGpuUse } from "./workers/gpus.ts";
import { usedBytes, volumeDir } from "./volumes/paths.ts";
import { Metrics, type EndpointLabels } from "./telemetry/metrics.ts";
import { JobTracer } from "./telemetry/tracing.ts";
import { Telemetry } from "./telemetry/telemetry.ts";

const GB = 1024 ** 3;
const MIB = 1024 ** 2;

/**
 * The platform's telemetry: metrics unless SVC_METRICS=0, traces when OTLP is configured (`otel` is
 * then what to shut down); undefined with both off, and then no collection point is called at all.
 */
export async function createTelemetry(
  store: Store,
  dataDir: string,
  live: { queue(): JobQueue | undefined; supervisor(): Supervisor | undefined },
): Promise<{ telemetry?: Telemetry; otel?: Otel }> {
  const otel = await startOtel("svc-platform");
  const metricsOn = process.env.SVC_METRICS !== "0";
  if (!otel && !metricsOn) return {};
  const metrics = metricsOn ? createMetrics(store, dataDir, live) : undefined;
  const tracer = otel && new JobTracer(otel, (endpointId) => store.endpoints.get(endpointId)?.name ?? endpointId);
  const telemetry = new Telemetry(metrics, tracer);
  telemetry.coldStartOf = (workerId, since) => {
    const w = live.supervisor()?.workers.get(workerId);
    if (!w || w.coldStartTraced || w.startedAt < since || w.spawnedAt === undefined || w.coldStartMs === undefined) return undefined;
    w.coldStartTraced = true; // started after the job came: started for it
    return { from: w.startedAt, to: w.spawnedAt + w.coldStartMs };
  };
  return { telemetry, otel };
}

function createMetrics(store: Store, dataDir: string, live: { queue(): JobQueue | undefined; supervisor(): Supervisor | undefined }): Metrics {
  const labelsOf = (endpointId: string): EndpointLabels | undefined => {
    const e = store.endpoints.get(endpointId);
    if (!e) return undefined;
    const env = e.environmentId ? store.apps.environment(e.environmentId) : undefined;
    const app = env ? store.apps.get(env.appId) : undefined;
    return { endpoint: e.name, app: app?.name ?? "", env: env?.name ?? "", flavour: flavourOf(e) };
  };
  return new Metrics({
    labelsOf,
    *queues() {
      const queue = live.queue();
      if (!queue) return;
      for (const e of store.endpoints.list()) {
        const s = queue.stats(e.id);
        yield { endpointId: e.id, queued: s.queued, running: s.running };
      }
    },
    *workers() {
      const supervisor = live.supervisor();
      if (!supervisor) return;
      for (const w of supervisor.workers.values()) {
        if (w.exited || (w.stopping && !w.unhealthy)) continue; // as /health counts them
        yield { endpointId: w.endpointId, state: supervisor.state(w) };
      }
    },
    volumes: () =>
      Promise.all(
        store.volumes.list().map(async (v) => ({
          name: v.name,
          sizeBytes: v.sizeGb * GB,
          usedBytes: await usedBytes(volumeDir(dataDir, v.id)).catch(() => 0),
        })),
      ),
    gpus: async () =>
      (await queryGpuUse()).map((g) => ({
        gpu: String(g.index),
        name: g.name,
        memoryUsedBytes: g.memoryUsedMiB * MIB,
        memoryTotalBytes: g.memoryTotalMiB * MIB,
        utilization: g.utilizationPercent / 100,
      })),
  });
}

/** The flavour label: the GPU group, else the CPU flavour (instance id), else "". */
const flavourOf = (e: EndpointRecord): string => e.gpuIds?.split(",")[0]?.trim() || e.instanceIds?.[0] || "";
