/**
 * The console's charts of the last hour (queue depth, throughput, p50/p99 execution, cold starts),
 * from the platform's own time series: every SAMPLE_MS one point per endpoint, kept in a ring of
 * an hour. Cheap on the hot path: a finished job adds one number to its endpoint's open bucket
 * (`jobFinished`); the rest (queue depth, new cold starts) is read once per sample from memory.
 * Nothing is stored: a restarted platform starts its charts afresh (docs/console.md).
 */
import type { JobView } from "../queue/views.ts";
import type { PlatformContext } from "../context.ts";
import type { SeriesPoint } from "./ui/types.ts";

export const SAMPLE_MS = 10_000;
const HOUR_MS = 3600_000;

interface Bucket {
  executions: number[];
  failed: number;
}

/** The q-quantile (0..1) of sorted values: nearest rank. */
export function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export class TimeSeries {
  private readonly open = new Map<string, Bucket>();
  private readonly rings = new Map<string, SeriesPoint[]>();
  private readonly seenColdStarts = new Set<string>();
  private readonly capacity: number;
  private timer: NodeJS.Timeout | undefined;
  private lastAt = Date.now();

  constructor(readonly sampleMs = SAMPLE_MS) {
    this.capacity = Math.ceil(HOUR_MS / sampleMs);
  }

  /** The queue's onFinal: one job ended (any final status). */
  jobFinished(view: JobView): void {
    let bucket = this.open.get(view.endpointId);
    if (!bucket) this.open.set(view.endpointId, (bucket = { executions: [], failed: 0 }));
    if (view.startedAt !== null && view.finishedAt !== null) bucket.executions.push(view.finishedAt - view.startedAt);
    if (view.status !== "COMPLETED") bucket.failed++;
  }

  start(ctx: PlatformContext): void {
    this.lastAt = Date.now();
    this.timer = setInterval(() => this.sample(ctx), this.sampleMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One point per endpoint that exists now; the rings of deleted endpoints go. */
  sample(ctx: PlatformContext, now = Date.now()): void {
    const seconds = Math.max(0.001, (now - this.lastAt) / 1000);
    this.lastAt = now;
    const cold = new Map<string, number[]>();
    for (const w of ctx.supervisor.workers.values()) {
      if (w.coldStartMs === undefined || this.seenColdStarts.has(w.id)) continue;
      this.seenColdStarts.add(w.id);
      cold.set(w.endpointId, [...(cold.get(w.endpointId) ?? []), w.coldStartMs]);
    }
    for (const id of this.seenColdStarts) if (!ctx.supervisor.workers.has(id)) this.seenColdStarts.delete(id);
    const live = new Set<string>();
    for (const endpoint of ctx.store.endpoints.list()) {
      live.add(endpoint.id);
      const stats = ctx.queue.stats(endpoint.id, now);
      const bucket = this.open.get(endpoint.id) ?? { executions: [], failed: 0 };
      const sorted = bucket.executions.sort((a, b) => a - b);
      const starts = cold.get(endpoint.id) ?? [];
      this.push(endpoint.id, {
        t: now,
        queued: stats.queued,
        running: stats.running,
        throughput: Math.round((sorted.length / seconds) * 1000) / 1000,
        p50: quantile(sorted, 0.5),
        p99: quantile(sorted, 0.99),
        failed: bucket.failed,
        coldStarts: starts.length,
        coldStartMs: starts.length ? Math.round(starts.reduce((a, b) => a + b, 0) / starts.length) : null,
      });
    }
    this.open.clear();
    for (const id of this.rings.keys()) if (!live.has(id)) this.rings.delete(id);
  }

  /** The endpoint's points of the last hour, oldest first. */
  points(endpointId: string): SeriesPoint[] {
    return this.rings.get(endpointId) ?? [];
  }

  private push(endpointId: string, point: SeriesPoint): void {
    let ring = this.rings.get(endpointId);
    if (!ring) this.rings.set(endpointId, (ring = []));
    ring.push(point);
    if (ring.length > this.capacity) ring.splice(0, ring.length - this.capacity);
  }
}
