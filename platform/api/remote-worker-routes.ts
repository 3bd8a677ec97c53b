/**
 * What a worker's launcher on another node (../workers/backends/launcher.ts) asks the platform for
 * before the worker itself runs: its launch description, for the one-time launch ticket its Ray job
 * carries (the description holds the worker's token; the ticket opens nothing else, and whoever
 * reads the job's variables later gets nothing), then, with the token, its build's artifact, and
 * a route for its output lines (they reach `svc logs` as a local worker's do). None of these marks
 * the worker alive or ready: the worker's own protocol requests do that.
 */
import { createReadStream } from "node:fs";
import { Readable } from "node:stream";
import type { H3, H3Event } from "h3";
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import { CUT_MARKER, MAX_LOG_LINE } from "../store/logs.ts";
import type { WorkerInfo } from "../workers/worker-info.ts";
import { workerByTicket, workerByToken } from "../workers/worker-credentials.ts";
import { json, jsonText, presentedKey, readJson } from "./_http.ts";

/** One batch of output lines: bounded, as the runtime's results are. */
const MAX_LINES_BYTES = 1_000_000;

export function registerRemoteWorkerRoutes(app: H3, ctx: PlatformContext): void {
  const remoteWorker = (event: H3Event): WorkerInfo & { remote: NonNullable<WorkerInfo["remote"]> } => {
    const id = event.context.params?.worker ?? "";
    const w = workerByToken(ctx.supervisor.workers, id, presentedKey(event));
    if (!w) throw errors.WORKER_TOKEN_INVALID(id);
    if (!w.remote) throw errors.NOT_FOUND("Remote worker", id); // a local worker has nothing to launch
    return w as WorkerInfo & { remote: NonNullable<WorkerInfo["remote"]> };
  };

  // The one route the launch ticket opens, once. Presented again, it stops the worker: whoever
  // redeemed it first holds the worker's token, and that token must die with the worker.
  app.get("/v2/_worker/:worker/launch", (event) => {
    const id = event.context.params?.worker ?? "";
    const w = workerByTicket(ctx.supervisor.workers, id, presentedKey(event));
    if (!w) throw errors.WORKER_TICKET_INVALID(id);
    const launch = w.remote!.launch;
    if (!launch) {
      void ctx.supervisor.ticketReused(w);
      throw errors.WORKER_LAUNCH_TAKEN(w.id);
    }
    w.remote!.launch = undefined;
    return json(200, launch);
  });

  app.get("/v2/_worker/:worker/artifact", (event) => {
    const w = remoteWorker(event);
    const build = ctx.store.builds.get(w.remote.buildId);
    const artifact = build && ctx.store.builds.artifact(build.sha256);
    if (!artifact) throw errors.NOT_FOUND("Artifact of build", w.remote.buildId);
    const stream = Readable.toWeb(createReadStream(artifact.path)) as unknown as ReadableStream;
    return new Response(stream, {
      status: 200,
      headers: { "content-type": "application/gzip", "content-length": String(artifact.size), "x-svc-sha256": build.sha256 },
    });
  });

  app.post("/v2/_worker/:worker/logs", async (event) => {
    const w = remoteWorker(event);
    const body = (await readJson(event, MAX_LINES_BYTES)) as { lines?: unknown } | null;
    if (!body || !Array.isArray(body.lines) || !body.lines.every((l) => typeof l === "string")) throw errors.BAD_REQUEST('logs needs {"lines": ["...", ...]}');
    for (const raw of body.lines as string[]) {
      const line = raw.length > MAX_LOG_LINE ? raw.slice(0, MAX_LOG_LINE) + CUT_MARKER : raw;
      ctx.store.logs.append(w.endpointId, w.id, line);
      w.lastLines.push(line);
      if (w.lastLines.length > 8) w.lastLines.shift();
    }
    return jsonText(200, '{"ok":true}');
  });
}
