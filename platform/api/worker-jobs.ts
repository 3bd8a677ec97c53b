/**
 * The worker job protocol apart from transport (contracts section 4): handing queued jobs to a
 * worker (job-take's long poll, batches, done-and-take) and applying its results to the queue,
 * one (job-done) or several (jobs-done, the hot path) at a time. worker-routes.ts and
 * hot-routes.ts serve it over HTTP.
 */
import { errors, isSvcError } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import type { WorkerInfo } from "../workers/supervisor.ts";
import { errorText } from "../queue/views.ts";
import type { ActiveJob } from "../queue/queue.ts";
import { readText, type Exchange, type Reply } from "./_http.ts";
import type { H3Event } from "h3";
import { parseJson, stringMember, type ParsedJson } from "./_json.ts";

export const MAX_RESULT_BYTES = 200_000_000;
export const MAX_BATCH = 64;
/** Errors reading a job-done body that mean the result itself cannot be stored. */
const UNSTORABLE = new Set(["JSON_MALFORMED", "JSON_TOO_DEEP", "PAYLOAD_TOO_LARGE"]);

/** A job as job-take hands it out; `input` is already JSON text; `traceparent` when the job is traced (docs/observability.md). */
const takeBody = (job: ActiveJob): string => {
  const traced = job.trace?.traceparent ? `,"traceparent":"${job.trace.traceparent}"` : "";
  return `{"id":${JSON.stringify(job.id)},"input":${job.input},"executionTimeoutMs":${job.executionTimeoutMs}${traced}}`;
};

export type WorkerJobs = ReturnType<typeof createWorkerJobs>;

export function createWorkerJobs(ctx: PlatformContext) {
  const { queue, supervisor, options, telemetry } = ctx;

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

  /** Up to `n` queued jobs for the worker, as job-take answers them (never waits); `bodies` holds those already taken. */
  const takeUpTo = (w: WorkerInfo, n: number, bodies: string[] = []): string[] => {
    if (!supervisor.takesWork(w)) return bodies;
    for (let next = bodies.length < n ? queue.takeNow(w.id, w.endpointId) : null; next; next = bodies.length < n ? queue.takeNow(w.id, w.endpointId) : null)
      bodies.push(takeBody(next));
    if (bodies.length > 0) telemetry?.batchTaken(w.endpointId, bodies.length);
    return bodies;
  };

  /** Long-polls for one job (as job-take does; at most `waitMs` when given), then up to `n` in all when more are queued. */
  const waitForJobs = async (ex: Exchange, w: WorkerInfo, n: number, waitMs?: number): Promise<string[]> => {
    if (!supervisor.takesWork(w)) return [];
    w.openPolls++;
    let job: Awaited<ReturnType<typeof queue.take>>;
    try {
      job = await queue.take(w.id, w.endpointId, Math.min(options.longPollMs, waitMs ?? Infinity), ex.onGone);
    } finally {
      w.openPolls--;
    }
    return job ? takeUpTo(w, n, [takeBody(job)]) : [];
  };

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
      const timedOut = errorType === "ExecutionTimeoutError";
      ok = queue.fail(w.id, jobId, error, errorType, timedOut ? "TIMED_OUT" : "FAILED");
      if (ok && timedOut) supervisor.timedOut(w.id, jobId); // the function runs on: its worker and processes end (docs/platform.md, "Resources")
    } else {
      ok = queue.complete(w.id, jobId, parsed!.member("output") ?? "null"); // the worker's own text: exact, not re-encoded
    }
    if (ok && (b.refresh_worker === true || b.stopPod === true)) void supervisor.stop(w, "the handler asked for a fresh worker (refresh_worker)");
    return ok;
  };

  return { readResult, failUnstorable, takeUpTo, waitForJobs, applyResult };
}

/**
 * jobs-done's body (docs/platform.md, "Hot path"): one JSON object per line, `{"id", "output"}`
 * or `{"id", "error"}`; `take=N` hands up to N queued jobs in the answer. Answers `{"ok": true,
 * "gone": [ids no longer the worker's], "next": [jobs]}` once committed.
 */
export async function applyResults(ctx: PlatformContext, jobs: WorkerJobs, w: WorkerInfo, ex: Exchange): Promise<Reply> {
  const body = await ex.resultLines(MAX_RESULT_BYTES);
  if ("overLimit" in body) {
    // The results together are too large to store: each job named fails at once (nothing left IN_PROGRESS), and 413.
    const tooLarge = errors.PAYLOAD_TOO_LARGE(MAX_RESULT_BYTES);
    for (const id of body.overLimit) jobs.failUnstorable(w, id, tooLarge);
    await ctx.store.jobs.durable();
    throw tooLarge;
  }
  const { text } = body;
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
      if (!jobs.failUnstorable(w, stringMember(line, "id") ?? "", error)) throw error;
      continue;
    }
    const id = (parsed.value as { id?: unknown } | null)?.id;
    if (typeof id !== "string") throw errors.BAD_REQUEST('jobs-done needs one JSON object per line: {"id": ..., "output": ...} or {"id": ..., "error": ...}');
    if ((parsed.value as { status?: unknown }).status === "IN_PROGRESS")
      throw errors.BAD_REQUEST("jobs-done carries final results only: send progress to job-done");
    results.push({ id, parsed });
  }
  const gone: string[] = [];
  for (const { id, parsed } of results) if (!jobs.applyResult(w, id, parsed)) gone.push(id);
  await ctx.store.jobs.durable(); // answered once committed: no acknowledged result runs again after kill -9
  const take = Math.min(MAX_BATCH, Math.trunc(Number(ex.query("take") ?? 0)) || 0);
  let next = jobs.takeUpTo(w, take);
  // `wait=1`: no job queued, so the answer waits for one like job-take does (the worker's thread is idle).
  if (next.length === 0 && take > 0 && ex.query("wait") === "1") next = await jobs.waitForJobs(ex, w, take);
  return { status: 200, text: `{"ok":true,"gone":${JSON.stringify(gone)},"next":[${next.join(",")}]}` };
}
