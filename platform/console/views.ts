/**
 * What the console's pages show, as plain JSON: apps and environments with their endpoints; an
 * endpoint with its workers, jobs, schedule and logs; volumes with their use; builds with what each
 * deployed. Read from the store and the supervisor as they are now (docs/console.md).
 */
import type { PlatformContext } from "../context.ts";
import type { EndpointRecord, JobStatus, RecentJob } from "../store/index.ts";
import { usedBytes, volumeDir } from "../volumes/paths.ts";

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

export const JOB_STATUSES: readonly JobStatus[] = ["IN_QUEUE", "IN_PROGRESS", "COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT"];

export function endpointSummary(ctx: PlatformContext, e: EndpointRecord) {
  const stats = ctx.queue.stats(e.id);
  const workers = ctx.supervisor.forEndpoint(e.id).filter((w) => !w.exited);
  return {
    id: e.id,
    name: e.name,
    type: e.type,
    url: `${ctx.baseUrl()}/${e.type === "LB" ? "lb" : "v2"}/${e.id}`,
    gpu: e.gpuIds ? { ids: e.gpuIds, count: e.gpuCount } : null,
    workersMin: e.workersMin,
    workersMax: e.workersMax,
    workers: workers.length,
    queued: stats.queued,
    running: stats.running,
    scheduled: e.schedule !== null && e.schedule !== undefined,
  };
}

/** Apps → environments → endpoints; endpoints of no environment (`svc run`'s live ones) apart. */
export function overview(ctx: PlatformContext) {
  const { store } = ctx;
  const endpoints = store.endpoints.list();
  return {
    apps: store.apps.list().map((app) => ({
      id: app.id,
      name: app.name,
      environments: store.apps.environments(app.id).map((env) => ({
        id: env.id,
        name: env.name,
        activeBuildId: env.activeBuildId,
        endpoints: endpoints.filter((e) => e.environmentId === env.id).map((e) => endpointSummary(ctx, e)),
      })),
    })),
    other: endpoints.filter((e) => !e.environmentId).map((e) => endpointSummary(ctx, e)),
  };
}

/** One endpoint: its settings, workers (state, limits, node, GPU), schedule with its next run, and why it cannot serve. */
export function endpointDetail(ctx: PlatformContext, e: EndpointRecord) {
  const { supervisor } = ctx;
  const gpus = supervisor.gpus.ofEndpoint(e.id);
  const workers = supervisor
    .forEndpoint(e.id)
    .filter((w) => !w.exited)
    .map((w) => ({
      id: w.id,
      state: w.stopping ? "stopping" : supervisor.state(w),
      startedAt: iso(w.startedAt),
      coldStartMs: w.coldStartMs ?? null,
      node: w.remote ? (w.remote.node ?? `${w.remote.backend} (not placed yet)`) : "this machine",
      gpus: gpus?.held.filter((g) => g.workerId === w.id).map((g) => g.index) ?? [],
      limits: w.limits ?? null,
      memoryBytes: w.cgroup?.memoryUsage()?.current ?? null,
      outdated: w.outdated,
    }));
  return {
    ...endpointSummary(ctx, e),
    environmentId: e.environmentId,
    executionTimeoutMs: e.executionTimeoutMs,
    idleTimeout: e.idleTimeout,
    limits: supervisor.limitsOf(e),
    workerList: workers,
    schedule: ctx.scheduler.view(e),
    problem: supervisor.problems.problem(e) ?? null,
  };
}

/** A stored job error: the runtime's `{error_type, error_message, error_traceback}` JSON text, or a plain message. */
function parsedError(error: string | null, errorType: string | null) {
  if (error === null) return null;
  try {
    const e = JSON.parse(error) as Record<string, unknown>;
    if (e && typeof e === "object" && !Array.isArray(e))
      return {
        type: typeof e.error_type === "string" ? e.error_type : errorType,
        message: typeof e.error_message === "string" ? e.error_message : error,
        traceback: typeof e.error_traceback === "string" && e.error_traceback.trim() ? e.error_traceback : null,
      };
  } catch {
    // a plain message (a returned {"error": "..."}, an input error)
  }
  return { type: errorType, message: error, traceback: null };
}

const jobView = (j: RecentJob) => ({
  id: j.id,
  status: j.status,
  kind: j.kind,
  createdAt: iso(j.created_at),
  startedAt: iso(j.started_at),
  finishedAt: iso(j.finished_at),
  delayMs: j.started_at === null ? null : j.started_at - j.created_at,
  executionMs: j.started_at === null || j.finished_at === null ? null : j.finished_at - j.started_at,
  inputBytes: j.input_bytes,
  workerId: j.worker_id,
  attempts: j.retries + 1,
  error: parsedError(j.error, j.error_type),
});

export function jobs(ctx: PlatformContext, endpointId: string, status: JobStatus | null, limit: number) {
  return ctx.store.jobs.recent(endpointId, status, limit).map(jobView);
}

/** Log lines after `after` (a cursor), or the newest; `search` keeps those that contain it (any case). */
export function logs(ctx: PlatformContext, endpointId: string, options: { after?: number; search?: string; limit: number }) {
  ctx.store.logs.flush();
  const needle = options.search?.toLowerCase();
  // A search looks through more of the newest lines than it shows.
  const lines = ctx.store.logs.lines(endpointId, { after: options.after, limit: needle ? options.limit * 20 : options.limit });
  const shown = needle ? lines.filter((l) => l.line.toLowerCase().includes(needle)).slice(-options.limit) : lines;
  return {
    cursor: lines.at(-1)?.id ?? options.after ?? null,
    lines: shown.map((l) => ({ id: l.id, at: iso(l.ts), workerId: l.workerId, line: l.line })),
  };
}

export async function volumes(ctx: PlatformContext) {
  const endpoints = ctx.store.endpoints.list();
  return Promise.all(
    ctx.store.volumes.list().map(async (v) => ({
      id: v.id,
      name: v.name,
      sizeGb: v.sizeGb,
      usedBytes: await usedBytes(volumeDir(ctx.options.dataDir, v.id)).catch(() => null),
      dataCenterId: v.dataCenterId,
      createdAt: iso(v.createdAt),
      endpoints: endpoints.filter((e) => e.networkVolumeId === v.id).map((e) => ({ id: e.id, name: e.name })),
    })),
  );
}

/** Each app's builds, newest first: size, what endpoints each deployed, and where it is active. */
export function builds(ctx: PlatformContext) {
  const { store } = ctx;
  return store.apps.list().map((app) => {
    const environments = store.apps.environments(app.id);
    return {
      app: app.name,
      builds: store.builds
        .forApp(app.id)
        .sort((a, b) => b.createdAt - a.createdAt)
        .map((b) => ({
          id: b.id,
          createdAt: iso(b.createdAt),
          sizeBytes: b.size,
          sha256: b.sha256,
          endpoints: Object.keys((b.manifest.endpoints as Record<string, unknown> | undefined) ?? {}),
          activeIn: environments.filter((env) => env.activeBuildId === b.id).map((env) => env.name),
        })),
    };
  });
}
