/**
 * The routes a stock hosted-SDK worker calls (the `runpod` package's runpod/serverless/modules/, run
 * unmodified: docs/deploy.md, "Stock workers"), under `/v2/_worker/<worker>/stock/`, in that SDK's
 * shapes. The platform hands it these URLs in its own variables (RUNPOD_WEBHOOK_GET_JOB, ...:
 * workers/worker-process.ts stockSdkEnv) and its API key is the worker's token: each route needs
 * it, as every worker route does (worker-routes.ts). The job protocol underneath is svc's own
 * (worker-jobs.ts), so queue, timeouts, cancel, retries and scaling are the same for both runtimes.
 *
 *   GET  job-take/<pod>?…&job_in_progress=0|1           one job, or 204 after the long poll
 *   GET  job-take-batch/<pod>?…&batch_size=N             a list of up to N (concurrency_modifier > 1)
 *   GET  job-stop/<pod>                                  long poll: {"jobsToStop": [ids]} (cancelled jobs), or 204
 *   POST job-done/<job>?…&isStream=true|false            {"output"}, {"error": "<text>"}, {"status": "IN_PROGRESS", "output"}, stopPod
 *   POST job-stream/<job>?…                              {"output": <chunk>}
 *   GET  ping?job_id=…&runpod_version=…                  heartbeat; `status=unhealthy&check&reason`: a failed fitness check
 */
import type { H3 } from "h3";
import type { PlatformContext } from "../context.ts";
import { waitSignals } from "../workers/worker-signals.ts";
import { exchangeOf, json, jsonText, noContent, queryParam } from "./_http.ts";
import { createWorkerJobs, MAX_BATCH } from "./worker-jobs.ts";
import { addStreamChunk, gone, workerRoute } from "./worker-routes.ts";

const OK = '{"ok":true}';
const PREFIX = "/v2/_worker/:worker/stock";

export function registerStockWorkerRoutes(app: H3, ctx: PlatformContext): void {
  const jobs = createWorkerJobs(ctx);
  const route = workerRoute(ctx);

  app.get(
    `${PREFIX}/job-take/:pod`,
    route(async (event, w) => {
      const taken = await jobs.waitForJobs(exchangeOf(event), w, 1);
      return taken.length === 0 ? noContent() : jsonText(200, taken[0]!);
    }),
  );

  app.get(
    `${PREFIX}/job-take-batch/:pod`,
    route(async (event, w) => {
      const size = Math.min(MAX_BATCH, Math.trunc(Number(queryParam(event, "batch_size") ?? 1)) || 1);
      const taken = await jobs.waitForJobs(exchangeOf(event), w, Math.max(1, size));
      return taken.length === 0 ? noContent() : jsonText(200, `[${taken.join(",")}]`);
    }),
  );

  // The SDK cancels the task of each job named (a cancel, from the client API); a stop of the worker
  // reaches it as SIGTERM after the grace period instead (it finishes what it runs, then exits).
  app.get(
    `${PREFIX}/job-stop/:pod`,
    route(async (event, w) => {
      const signals = await waitSignals(w, ctx.options.longPollMs, event.req.signal);
      return signals && signals.cancel.length > 0 ? json(200, { jobsToStop: signals.cancel }) : noContent();
    }),
  );

  // The SDK's bodies are the job-done bodies of svc's protocol already: a handler's exception is
  // `{"error": "<JSON text of error_type, error_message, error_traceback, ...>"}`, kept as that text,
  // as the hosted platform shows it; `stopPod` (refresh_worker) ends the worker after the job.
  app.post(
    `${PREFIX}/job-done/:job`,
    route(async (event, w) => {
      const jobId = event.context.params!.job!;
      const parsed = await jobs.readResult(event, w, jobId);
      if (!jobs.applyResult(w, jobId, parsed)) return gone(jobId);
      if ((parsed?.value as { status?: unknown } | undefined)?.status !== "IN_PROGRESS") await ctx.store.jobs.durable();
      return jsonText(200, OK);
    }),
  );

  app.post(
    `${PREFIX}/job-stream/:job`,
    route((event, w) => addStreamChunk(ctx, event, w)),
  );

  app.get(
    `${PREFIX}/ping`,
    route((event, w) => {
      if (queryParam(event, "status") === "unhealthy") {
        const check = queryParam(event, "check") ?? "a fitness check";
        ctx.supervisor.problems.reportFailure(w, {
          error_type: "FitnessCheckFailed",
          error_message: `the worker's fitness check ${check} failed: ${queryParam(event, "reason") ?? "no reason given"}`,
          file: null,
          line: null,
          remedy: "Fix what the check (runpod.serverless.register_fitness_check) tests for, or remove the check, and deploy again.",
        });
      }
      return jsonText(200, OK);
    }),
  );
}
