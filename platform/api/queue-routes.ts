/** Queue-based endpoint routes under `/v2/<endpoint_id>/` (reference section 1). */
import type { H3, H3Event } from "h3";
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import type { EndpointRecord } from "../store/index.ts";
import { newJobId } from "../_ids.ts";
import { parseRunBody, DEFAULT_TTL_MS } from "../queue/policy.ts";
import { shortBody, statusBody, type JobView } from "../queue/views.ts";
import { json, jsonText, errorReply, exchangeOf, answer, parseBody, type Answer, type Exchange, type Reply } from "./_http.ts";
import { RateLimiter, type RouteClass } from "./rate-limit.ts";

const DEFAULT_WAIT_MS = 90_000;

function waitParam(ex: Exchange): number {
  const raw = ex.query("wait");
  if (raw === null || raw === "") return DEFAULT_WAIT_MS;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw errors.BAD_REQUEST(`wait must be a number of milliseconds (1000 to 300000), got "${raw}"`);
  return Math.min(300_000, Math.max(1000, Math.round(n)));
}

const finalCodes = (view: JobView): number => (view.status === "FAILED" && view.errorType === "InputValidationError" ? 400 : 200);

/** What the queue routes give the rest of the API: the rate limiter, and runsync for the hot path. */
export interface QueueRoutes {
  limiter: RateLimiter;
  /** POST /v2/<endpoint>/runsync, apart from transport: hot-routes.ts serves it, not h3. */
  runsync(endpointId: string, ex: Exchange): Promise<Reply>;
}

type Route = (cls: RouteClass | null, fn: (event: H3Event, endpoint: EndpointRecord) => Promise<Answer> | Answer) => (event: H3Event) => Promise<Answer>;

export function registerQueueRoutes(app: H3, ctx: PlatformContext): QueueRoutes {
  const { store, options } = ctx;
  const limiter = new RateLimiter(options.rateLimits);

  /**
   * Runs `fn` for the endpoint within its rate limit. An error is thrown on to h3's onError
   * (_http.ts onRouteError), or answered by `onError` on the hot path, which has no h3.
   */
  const guarded = async <T>(
    endpointId: string,
    cls: RouteClass | null,
    fn: (endpoint: EndpointRecord) => Promise<T> | T,
    onError?: (error: unknown) => T,
  ): Promise<T> => {
    let release: (() => void) | undefined;
    try {
      const endpoint = store.endpoints.get(endpointId);
      if (!endpoint) throw errors.NOT_FOUND("Endpoint", endpointId);
      if (cls) release = limiter.enter(endpoint.id, cls);
      return await fn(endpoint);
    } catch (error) {
      if (!onError) throw error;
      return onError(error);
    } finally {
      release?.();
    }
  };

  /** Wraps an h3 route: endpoint lookup and rate limit. */
  const route: Route = (cls, fn) => (event) => guarded(event.context.params?.endpoint ?? "", cls, (endpoint) => fn(event, endpoint));
  const replyError = (error: unknown) => errorReply(error, options.log);

  const runsync = (endpointId: string, ex: Exchange): Promise<Reply> =>
    guarded(
      endpointId,
      "runsync",
      async (endpoint) => {
        const wait = waitParam(ex);
        const job = await enqueue(ctx, ex, endpoint, "runsync");
        return answerWhenFinal(ctx, ex, endpoint, job.id, wait);
      },
      replyError,
    );

  registerJobRoutes(app, ctx, route);
  app.get(
    "/v2/:endpoint/health",
    route(null, (_event, endpoint) => json(200, endpointHealth(ctx, endpoint))),
  );
  return { limiter, runsync };
}

const jobNotFound = (id: string) => errors.NOT_FOUND("Job", id);

async function enqueue(ctx: PlatformContext, ex: Exchange, endpoint: EndpointRecord, kind: "run" | "runsync") {
  const { options } = ctx;
  if (endpoint.type === "LB")
    throw errors.BAD_REQUEST(`Endpoint "${endpoint.name}" is load-balanced: call its routes under ${ctx.baseUrl()}/lb/${endpoint.id}/`);
  const parsed = parseBody(await ex.text(kind === "run" ? options.maxRunBytes : options.maxRunsyncBytes));
  const body = parseRunBody(parsed?.value);
  // A worker's key may not aim a webhook at the host's own addresses: the platform would POST there for a worker with no network.
  if (body.webhook && ctx.workerKeys.verify(ex.key())) await ctx.webhooks.check(body.webhook);
  return ctx.queue.enqueue(
    {
      id: newJobId(),
      endpointId: endpoint.id,
      kind,
      input: parsed!.member("input") ?? JSON.stringify(body.input), // the client's own text: exact, not re-encoded
      webhook: body.webhook ?? null,
      executionTimeoutMs: body.policy?.executionTimeout ?? endpoint.executionTimeoutMs,
      ttlMs: body.policy?.ttl ?? DEFAULT_TTL_MS,
      lowPriority: body.policy?.lowPriority ?? false,
    },
    ex.traceparent(),
  );
}

async function answerWhenFinal(ctx: PlatformContext, ex: Exchange, endpoint: EndpointRecord, jobId: string, waitMs: number): Promise<Reply> {
  const view = await ctx.queue.waitFinal(jobId, endpoint.id, waitMs, ex.onGone);
  if (!view) throw jobNotFound(jobId);
  if (view.finishedAt === null) {
    await ctx.store.jobs.durable(jobId); // the answer names the job: it is committed first (a held runsync job too)
    return { status: 200, text: shortBody(view.id, view.status) };
  }
  await ctx.store.jobs.durable(); // a result is answered once committed: it does not run again after kill -9
  return { status: finalCodes(view), text: statusBody(view) };
}

/** run, status, status-sync, stream, cancel, retry, purge-queue: a client's jobs (runsync is the hot path's). */
function registerJobRoutes(app: H3, ctx: PlatformContext, route: Route): void {
  const { queue, store, options } = ctx;
  app.post(
    "/v2/:endpoint/run",
    route("run", async (event, endpoint) => {
      const job = await enqueue(ctx, exchangeOf(event), endpoint, "run");
      await store.jobs.durable(); // committed before it is acknowledged: survives kill -9
      return jsonText(200, shortBody(job.id, "IN_QUEUE"));
    }),
  );

  app.get(
    "/v2/:endpoint/status/:job",
    route("status", (event, endpoint) => {
      const id = event.context.params!.job!;
      const view = queue.view(id, endpoint.id);
      if (!view) throw jobNotFound(id);
      return jsonText(200, statusBody(view));
    }),
  );

  app.get(
    "/v2/:endpoint/status-sync/:job",
    route("status", async (event, endpoint) => {
      const ex = exchangeOf(event);
      return answer(await answerWhenFinal(ctx, ex, endpoint, event.context.params!.job!, waitParam(ex)));
    }),
  );

  app.get(
    "/v2/:endpoint/stream/:job",
    route("status", async (event, endpoint) => {
      const id = event.context.params!.job!;
      const read = await queue.readStream(id, endpoint.id, options.streamWaitMs);
      if (!read) throw jobNotFound(id);
      const stream = read.chunks.map((chunk) => `{"output":${chunk}}`).join(",");
      return jsonText(200, `{"status":"${read.status}","stream":[${stream}]}`);
    }),
  );

  const cancel = route("cancel", (event, endpoint) => {
    const id = event.context.params!.job!;
    const view = queue.cancel(id, endpoint.id);
    if (!view) throw jobNotFound(id);
    return jsonText(200, shortBody(view.id, view.status));
  });
  app.post("/v2/:endpoint/cancel/:job", cancel);
  app.get("/v2/:endpoint/cancel/:job", cancel);

  app.post(
    "/v2/:endpoint/retry/:job",
    route("cancel", (event, endpoint) => {
      const id = event.context.params!.job!;
      const result = queue.retry(id, endpoint.id);
      if (!result) throw jobNotFound(id);
      if (!result.retried) throw errors.BAD_REQUEST(`Job ${id} is ${result.status}: only FAILED or TIMED_OUT jobs can be retried.`);
      return jsonText(200, shortBody(id, "IN_QUEUE"));
    }),
  );

  app.post(
    "/v2/:endpoint/purge-queue",
    route("purge", (_event, endpoint) => json(200, { removed: queue.purge(endpoint.id), status: "completed" })),
  );
}

/** GET health's body: job counts by status, workers by state, the schedule, and why they cannot serve if so. */
function endpointHealth(ctx: PlatformContext, endpoint: EndpointRecord) {
  const { store } = ctx;
  const jobs = { completed: 0, failed: 0, inProgress: 0, inQueue: 0, retried: 0 };
  for (const row of store.jobs.counts(endpoint.id)) {
    if (row.status === "COMPLETED") jobs.completed += row.n;
    else if (row.status === "FAILED" || row.status === "TIMED_OUT") jobs.failed += row.n;
    else if (row.status === "IN_PROGRESS") jobs.inProgress += row.n;
    else if (row.status === "IN_QUEUE") jobs.inQueue += row.n;
    jobs.retried += row.retried ?? 0;
  }
  const workers = { idle: 0, running: 0, initializing: 0, ready: 0, throttled: 0, unhealthy: 0 };
  for (const w of ctx.supervisor.forEndpoint(endpoint.id)) {
    if (w.stopping && !w.unhealthy) continue;
    const state = ctx.supervisor.state(w);
    workers[state]++;
    if (state === "idle" || state === "running") workers.ready++;
  }
  const problem = ctx.supervisor.problems.problem(endpoint); // why its workers cannot serve (docs/platform.md)
  const gpus = ctx.supervisor.gpus.ofEndpoint(endpoint.id); // GPU endpoints on a GPU machine (docs/platform.md, "GPUs")
  const schedule = ctx.scheduler.view(endpoint); // last and next runs of a scheduled endpoint (docs/platform.md, "Schedules")
  const limits = ctx.supervisor.limitsOf(endpoint); // what each of its workers gets, and which limits hold (docs/platform.md, "Resources")
  return { jobs, workers, limits, ...(gpus && { gpus }), ...(schedule && { schedule }), ...(problem && { error: problem }) };
}
