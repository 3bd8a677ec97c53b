/**
 * Worker protocol routes under `/v2/_worker/<worker_id>/` (contracts section 4 and 6): every one
 * needs the worker's own token (`Authorization: Bearer <SVC_WORKER_TOKEN>`).
 */
import type { H3, H3Event } from "h3";
import { errors, isSvcError } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import type { WorkerInfo } from "../workers/supervisor.ts";
import { errorText } from "../queue/views.ts";
import type { ActiveJob } from "../queue/queue.ts";
import { json, jsonText, noContent, readJson, readText, errorResponse, errorReply, exchangeOf, presentedKey, queryParam, type Answer, type Exchange, type Reply } from "./_http.ts";
import { parseJson, stringMember, type ParsedJson } from "./_json.ts";
import { saveOutputFile } from "./files.ts";

const MAX_RESULT_BYTES = 200_000_000;
const MAX_CHUNK_BYTES = 1_000_000;
const MAX_BATCH = 64;
const OK = '{"ok":true}';
/** Errors reading a job-done body that mean the result itself cannot be stored. */
const UNSTORABLE = new Set(["JSON_MALFORMED", "JSON_TOO_DEEP", "PAYLOAD_TOO_LARGE"]);

/** A job as job-take hands it out; `input` is already JSON text. */
const takeBody = (job: ActiveJob): string => `{"id":${JSON.stringify(job.id)},"input":${job.input},"executionTimeoutMs":${job.executionTimeoutMs}}`;

/** What the worker routes give the rest of the API: jobs-done for the hot path. */
export interface WorkerRoutes {
  /** POST /v2/_worker/<worker>/jobs-done, apart from transport: hot-routes.ts serves it, not h3. */
  jobsDone(workerId: string, ex: Exchange): Promise<Reply>;
}

export function registerWorkerRoutes(app: H3, ctx: PlatformContext): WorkerRoutes {
  const { queue, supervisor, options } = ctx;

  /** Runs `fn` for the worker its token names; an error becomes `onError`'s answer. */
  const authenticated = async <T>(workerId: string, token: string | undefined, fn: (w: WorkerInfo) => Promise<T> | T, onError: (error: unknown) => T): Promise<T> => {
    try {
      const w = supervisor.authenticate(workerId, token);
      if (!w) throw errors.WORKER_TOKEN_INVALID(workerId);
      supervisor.seen(w);
      return await fn(w);
    } catch (error) {
      return onError(error);
    }
  };

  const route =
    (fn: (event: H3Event, w: WorkerInfo) => Promise<Answer> | Answer) =>
    (event: H3Event): Promise<Answer> =>
      authenticated(event.context.params?.worker ?? "", presentedKey(event), (w) => fn(event, w), (error) => errorResponse(error, options.log));

  /**
   * The job-done body. A result the platform cannot store (NaN or Infinity, nested too deep, over
   * the size limit) fails the job at once, so that it is never left running, and answers the 4xx.
   * A body cut short is only answered 400 (the runtime sends it again). docs/platform.md, "Limits".
   */
  const readResult = async (event: H3Event, w: WorkerInfo, jobId: string): Promise<ParsedJson | undefined> => {
    try {
      return parseJson(await readText(event, MAX_RESULT_BYTES), "the job's result");
    } catch (error) {
      if (failUnstorable(w, jobId, error)) await ctx.store.jobs.durable();
      throw error;
    }
  };

  /** Fails the worker's job when `error` says its result cannot be stored; false when it says something else. */
  const failUnstorable = (w: WorkerInfo, jobId: string, error: unknown): boolean => {
    if (!isSvcError(error) || !UNSTORABLE.has(error.code) || !queue.heldBy(w.id, jobId)) return false;
    const invalid = errors.JOB_OUTPUT_INVALID(error.message.split("\n")[0]!.replace(/\.$/, ""));
    queue.fail(w.id, jobId, JSON.stringify({ error_type: invalid.code, error_message: invalid.message, error_traceback: "" }), invalid.code);
    return true;
  };

  /** Up to `n` queued jobs for the worker, as job-take answers them (never waits). */
  const takeUpTo = (w: WorkerInfo, n: number): string[] => {
    const bodies: string[] = [];
    if (!supervisor.takesWork(w)) return bodies;
    for (let next = n > 0 ? queue.takeNow(w.id, w.endpointId) : null; next; next = bodies.length < n ? queue.takeNow(w.id, w.endpointId) : null) bodies.push(takeBody(next));
    return bodies;
  };

  /** Long-polls for one job (as job-take does), then up to `n` in all when more are queued. */
  const waitForJobs = async (ex: Exchange, w: WorkerInfo, n: number): Promise<string[]> => {
    if (!supervisor.takesWork(w)) return [];
    w.openPolls++;
    let job;
    try {
      job = await queue.take(w.id, w.endpointId, options.longPollMs, ex.onGone);
    } finally {
      w.openPolls--;
    }
    return job ? [takeBody(job), ...takeUpTo(w, n - 1)] : [];
  };

  const gone = (jobId: string) => json(404, { error: `Job ${jobId} is no longer this worker's (cancelled, timed out or unknown).` });

  app.get(
    "/v2/_worker/:worker/job-take",
    route(async (event, w) => {
      // Batch take (reference section 4): `batch_size=N` answers a list of up to N jobs, the rest
      // of them only if already queued (no wait for more).
      const batch = Math.min(MAX_BATCH, Math.trunc(Number(queryParam(event, "batch_size") ?? 1)) || 1);
      const jobs = await waitForJobs(exchangeOf(event), w, batch);
      if (jobs.length === 0) return noContent();
      return jsonText(200, batch <= 1 ? jobs[0]! : `[${jobs.join(",")}]`);
    }),
  );

  /** Applies one job-done body to the queue; false when the job is no longer the worker's. */
  const applyResult = (w: WorkerInfo, jobId: string, parsed: ParsedJson | undefined): boolean => {
    const body = parsed?.value;
    if (!body || typeof body !== "object" || Array.isArray(body)) throw errors.BAD_REQUEST('job-done needs a JSON object: {"output": ...} or {"error": ...}');
    const b = body as Record<string, unknown>;
    if (b.status === "IN_PROGRESS") return queue.progress(w.id, jobId, parsed!.member("output") ?? null);
    let ok: boolean;
    if (b.error !== undefined && b.error !== null) {
      const { error, errorType } = errorText(b.error);
      // The runtime enforces executionTimeout and reports it so: the job is TIMED_OUT, not FAILED.
      ok = queue.fail(w.id, jobId, error, errorType, errorType === "ExecutionTimeoutError" ? "TIMED_OUT" : "FAILED");
    } else {
      ok = queue.complete(w.id, jobId, parsed!.member("output") ?? "null"); // the worker's own text: exact, not re-encoded
    }
    if (ok && (b.refresh_worker === true || b.stopPod === true)) void supervisor.stop(w, "the handler asked for a fresh worker (refresh_worker)");
    return ok;
  };

  app.post(
    "/v2/_worker/:worker/job-done/:job",
    route(async (event, w) => {
      const jobId = event.context.params!.job!;
      const parsed = await readResult(event, w, jobId);
      const b = parsed?.value as Record<string, unknown> | undefined;
      if (!applyResult(w, jobId, parsed)) return gone(jobId);
      if (b!.status === "IN_PROGRESS") return jsonText(200, OK);
      await ctx.store.jobs.durable(); // answered once committed: no acknowledged result runs again after kill -9
      // Done-and-take (contracts, "Runtime decisions"): `take=1` on a final result hands the next
      // queued job in this answer, saving the worker a job-take round trip. Never waits.
      const next = queryParam(event, "take") === "1" ? takeUpTo(w, 1) : [];
      return jsonText(200, next.length > 0 ? `{"ok":true,"next":${next[0]}}` : OK);
    }),
  );

  /**
   * POST jobs-done (served by hot-routes.ts, not h3): results of several jobs in one request
   * (docs/platform.md, "Hot path"), one JSON object per line, `{"id", "output"}` or
   * `{"id", "error"}`; `take=N` hands up to N queued jobs in the answer. Answers `{"ok": true,
   * "gone": [ids no longer the worker's], "next": [jobs]}` once committed.
   */
  const jobsDone = (workerId: string, ex: Exchange): Promise<Reply> =>
    authenticated(workerId, ex.key(), (w) => applyResults(w, ex), (error) => errorReply(error, options.log));

  const applyResults = async (w: WorkerInfo, ex: Exchange): Promise<Reply> => {
    const text = await ex.text(MAX_RESULT_BYTES);
    // Every line is parsed as JSON before any applies: a line the protocol does not allow answers
    // 400 with nothing applied; a result that cannot be stored fails its own job only.
    const results: Array<{ id: string; parsed: ParsedJson }> = [];
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      let parsed: ParsedJson;
      try {
        parsed = parseJson(line, "the job's result");
      } catch (error) {
        // Not storable (NaN, too deep): that job fails at once, the others stand. Its id is read
        // as JSON too, whatever the line's spacing (docs/platform.md, "Limits").
        if (!failUnstorable(w, stringMember(line, "id") ?? "", error)) throw error;
        continue;
      }
      const id = (parsed.value as { id?: unknown } | null)?.id;
      if (typeof id !== "string") throw errors.BAD_REQUEST('jobs-done needs one JSON object per line: {"id": ..., "output": ...} or {"id": ..., "error": ...}');
      if ((parsed.value as { status?: unknown }).status === "IN_PROGRESS") throw errors.BAD_REQUEST("jobs-done carries final results only: send progress to job-done");
      results.push({ id, parsed });
    }
    const gone: string[] = [];
    for (const { id, parsed } of results) if (!applyResult(w, id, parsed)) gone.push(id);
    await ctx.store.jobs.durable(); // answered once committed: no acknowledged result runs again after kill -9
    const take = Math.min(MAX_BATCH, Math.trunc(Number(ex.query("take") ?? 0)) || 0);
    let next = takeUpTo(w, take);
    // `wait=1`: no job queued, so the answer waits for one like job-take does (the worker's thread is idle).
    if (next.length === 0 && take > 0 && ex.query("wait") === "1") next = await waitForJobs(ex, w, take);
    return { status: 200, text: `{"ok":true,"gone":${JSON.stringify(gone)},"next":[${next.join(",")}]}` };
  };


  app.post(
    "/v2/_worker/:worker/job-stream/:job",
    route(async (event, w) => {
      const jobId = event.context.params!.job!;
      const body = await readJson(event, MAX_RESULT_BYTES);
      if (!body || typeof body !== "object" || !("output" in body)) throw errors.BAD_REQUEST('job-stream needs {"output": <chunk>}');
      const chunk = JSON.stringify((body as { output: unknown }).output ?? null);
      if (Buffer.byteLength(chunk) > MAX_CHUNK_BYTES) throw errors.PAYLOAD_TOO_LARGE(MAX_CHUNK_BYTES);
      if (!queue.addChunk(w.id, jobId, chunk)) return gone(jobId);
      return jsonText(200, OK);
    }),
  );

  app.get(
    "/v2/_worker/:worker/ping",
    route(() => jsonText(200, OK)),
  );

  app.get(
    "/v2/_worker/:worker/signals",
    route(async (event, w) => {
      const signals = await supervisor.signals(w, options.longPollMs, event.req.signal);
      return signals ? json(200, signals) : noContent();
    }),
  );

  // The runtime could not import the endpoint's module (docs/platform.md): the endpoint shows why.
  app.post(
    "/v2/_worker/:worker/error",
    route(async (event, w) => {
      const body = (await readJson(event, MAX_CHUNK_BYTES)) as { error?: Record<string, unknown> } | null;
      const e = body?.error;
      if (!e || typeof e.error_type !== "string" || typeof e.error_message !== "string") throw errors.BAD_REQUEST('error needs {"error": {"error_type", "error_message", ...}}');
      supervisor.reportFailure(w, {
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
  return { jobsDone };
}
