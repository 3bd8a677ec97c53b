/**
 * Worker protocol routes under `/v2/_worker/<worker_id>/` (contracts section 4 and 6): every one
 * needs the worker's own token (`Authorization: Bearer <SVC_WORKER_TOKEN>`). The job protocol
 * itself (taking jobs, applying results) is worker-jobs.ts.
 */
import type { H3, H3Event } from "h3";
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import type { WorkerInfo } from "../workers/supervisor.ts";
import { workerByToken } from "../workers/worker-credentials.ts";
import { waitSignals } from "../workers/worker-signals.ts";
import { json, jsonText, noContent, readJson, errorReply, exchangeOf, presentedKey, queryParam, type Answer, type Exchange, type Reply } from "./_http.ts";
import { saveOutputFile } from "./files.ts";
import { applyResults, createWorkerJobs, MAX_BATCH, MAX_RESULT_BYTES, type WorkerJobs } from "./worker-jobs.ts";

const MAX_CHUNK_BYTES = 1_000_000;
const OK = '{"ok":true}';

/** What the worker routes give the rest of the API: jobs-done for the hot path. */
export interface WorkerRoutes {
  /** POST /v2/_worker/<worker>/jobs-done, apart from transport: hot-routes.ts serves it, not h3. */
  jobsDone(workerId: string, ex: Exchange): Promise<Reply>;
}

export type Route = (fn: (event: H3Event, w: WorkerInfo) => Promise<Answer> | Answer) => (event: H3Event) => Promise<Answer> | Answer;

/** The worker its token names, marked seen; 401 WORKER_TOKEN_INVALID for any other token. */
export function workerAuthenticator(ctx: PlatformContext): (workerId: string, token: string | undefined) => WorkerInfo {
  return (workerId, token) => {
    const w = workerByToken(ctx.supervisor.workers, workerId, token);
    if (!w) throw errors.WORKER_TOKEN_INVALID(workerId);
    ctx.supervisor.seen(w);
    return w;
  };
}

/** Runs `fn` for the worker its token names (`:worker` in the path); an error goes on to h3's onError (_http.ts onRouteError). */
export function workerRoute(ctx: PlatformContext): Route {
  const workerOf = workerAuthenticator(ctx);
  return (fn) => (event) => fn(event, workerOf(event.context.params?.worker ?? "", presentedKey(event)));
}

export function registerWorkerRoutes(app: H3, ctx: PlatformContext): WorkerRoutes {
  const { options } = ctx;
  const jobs = createWorkerJobs(ctx);
  const workerOf = workerAuthenticator(ctx);
  const route = workerRoute(ctx);
  /** jobs-done (the hot path, no h3): the same check, its error answered here. */
  const jobsDone = async (workerId: string, ex: Exchange): Promise<Reply> => {
    try {
      return await applyResults(ctx, jobs, workerOf(workerId, ex.key()), ex);
    } catch (error) {
      return errorReply(error, options.log);
    }
  };

  registerJobRoutes(app, ctx, route, jobs);
  registerWorkerStateRoutes(app, ctx, route);
  return { jobsDone };
}

export const gone = (jobId: string) => json(404, { error: `Job ${jobId} is no longer this worker's (cancelled, timed out or unknown).` });

/** job-take, job-done and job-stream: the jobs a worker runs. */
function registerJobRoutes(app: H3, ctx: PlatformContext, route: Route, jobs: WorkerJobs): void {
  app.get(
    "/v2/_worker/:worker/job-take",
    route(async (event, w) => {
      // Batch take (reference section 4): `batch_size=N` answers a list of up to N jobs, the rest
      // of them only if already queued (no wait for more). `wait_ms=M` (ours) holds the poll at
      // most M ms: a batching worker fills a batch until its max_wait_ms (docs/platform.md, "Request batching").
      const batch = Math.min(MAX_BATCH, Math.trunc(Number(queryParam(event, "batch_size") ?? 1)) || 1);
      const waitMs = Number(queryParam(event, "wait_ms") ?? NaN);
      const taken = await jobs.waitForJobs(exchangeOf(event), w, batch, Number.isFinite(waitMs) ? Math.max(0, waitMs) : undefined);
      if (taken.length === 0) return noContent();
      return jsonText(200, batch <= 1 ? taken[0]! : `[${taken.join(",")}]`);
    }),
  );

  app.post(
    "/v2/_worker/:worker/job-done/:job",
    route(async (event, w) => {
      const jobId = event.context.params!.job!;
      const parsed = await jobs.readResult(event, w, jobId);
      const b = parsed?.value as Record<string, unknown> | undefined;
      if (!jobs.applyResult(w, jobId, parsed)) return gone(jobId);
      if (b!.status === "IN_PROGRESS") return jsonText(200, OK);
      await ctx.store.jobs.durable(); // answered once committed: no acknowledged result runs again after kill -9
      // Done-and-take (contracts, "Runtime decisions"): `take=1` on a final result hands the next
      // queued job in this answer, saving the worker a job-take round trip. Never waits.
      const next = queryParam(event, "take") === "1" ? jobs.takeUpTo(w, 1) : [];
      return jsonText(200, next.length > 0 ? `{"ok":true,"next":${next[0]}}` : OK);
    }),
  );

  app.post(
    "/v2/_worker/:worker/job-stream/:job",
    route((event, w) => addStreamChunk(ctx, event, w)),
  );
}

/** job-stream: `{"output": <chunk>}` for the job `:job` of the worker; 404 when it is no longer the worker's. */
export async function addStreamChunk(ctx: PlatformContext, event: H3Event, w: WorkerInfo): Promise<Answer> {
  const jobId = event.context.params!.job!;
  const body = await readJson(event, MAX_RESULT_BYTES);
  if (!body || typeof body !== "object" || !("output" in body)) throw errors.BAD_REQUEST('job-stream needs {"output": <chunk>}');
  const chunk = JSON.stringify((body as { output: unknown }).output ?? null);
  if (Buffer.byteLength(chunk) > MAX_CHUNK_BYTES) throw errors.PAYLOAD_TOO_LARGE(MAX_CHUNK_BYTES);
  if (!ctx.queue.addChunk(w.id, jobId, chunk)) return gone(jobId);
  return jsonText(200, OK);
}

/** ping, signals, error and files: the worker's own state and what it reports. */
function registerWorkerStateRoutes(app: H3, ctx: PlatformContext, route: Route): void {
  const { supervisor, options } = ctx;
  app.get(
    "/v2/_worker/:worker/ping",
    route(() => jsonText(200, OK)),
  );

  app.get(
    "/v2/_worker/:worker/signals",
    route(async (event, w) => {
      const signals = await waitSignals(w, options.longPollMs, event.req.signal);
      return signals ? json(200, signals) : noContent();
    }),
  );

  // The runtime could not import the endpoint's module (docs/platform.md): the endpoint shows why.
  app.post(
    "/v2/_worker/:worker/error",
    route(async (event, w) => {
      const body = (await readJson(event, MAX_CHUNK_BYTES)) as { error?: Record<string, unknown> } | null;
      const e = body?.error;
      if (!e || typeof e.error_type !== "string" || typeof e.error_message !== "string")
        throw errors.BAD_REQUEST('error needs {"error": {"error_type", "error_message", ...}}');
      supervisor.problems.reportFailure(w, {
        error_type: e.error_type,
        error_message: e.error_message,
        error_traceback: typeof e.error_traceback === "string" ? e.error_traceback : undefined,
        file: typeof e.file === "string" ? e.file : null,
        line: typeof e.line === "number" ? e.line : null,
        remedy: typeof e.remedy === "string" ? e.remedy : undefined,
      });
      return jsonText(200, OK);
    }),
  );

  app.post(
    "/v2/_worker/:worker/files",
    route(async (event, w) => {
      const name = queryParam(event, "name") ?? "";
      const saved = await saveOutputFile(ctx, event, w.endpointId, name);
      return json(200, saved);
    }),
  );
}
