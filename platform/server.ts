/**
 * startPlatform: the embedded platform in this process — SQLite store, job queue, worker
 * supervisor and autoscaler, and the HTTP API (REST v2, worker protocol, GraphQL, uploads,
 * files, load-balancer proxy) on loopback.
 */
import { createServer, type Server } from "node:http";
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import { ConnectionCaps, raiseDescriptorLimit } from "./api/connection-caps.ts";
import { createIdentify } from "./api/connection-identity.ts";
import { join } from "node:path";
import { toNodeHandler } from "h3";
import { errors } from "../core/errors.ts";
import { resolveOptions, type PlatformOptions } from "./options.ts";
import { ensureApiKey, DB_FILE, API_KEY_FILE } from "./state-dir.ts";
import { createStore } from "./store/index.ts";
import { JobQueue } from "./queue/queue.ts";
import { createWebhookSender } from "./queue/webhooks.ts";
import { parseWebhookAllow } from "./queue/webhook-targets.ts";
import { createScheduler } from "./queue/scheduler.ts";
import { statusBody } from "./queue/views.ts";
import { Supervisor } from "./workers/supervisor.ts";
import { Autoscaler } from "./workers/autoscaler.ts";
import { listenUnix, platformSocketPath, runDir } from "./workers/worker-channel.ts";
import { createApi } from "./api/app.ts";
import { createS3Api } from "./volumes/s3-handler.ts";
import { createShellRoute, type ShellRoute } from "./api/shell-route.ts";
import { mountDisks, unmountDisks } from "./volumes/volume-disk.ts";
import { volumeDir } from "./volumes/paths.ts";
import { sha256Hex } from "./_ids.ts";
import { createWorkerKeys } from "./worker-keys.ts";
import { createSecrets } from "./secrets.ts";
import { createKeys } from "./keys/keys.ts";
import { createAudit } from "./history/audit.ts";
import { connectRay } from "./workers/backends/ray.ts";
import type { PlatformContext } from "./context.ts";
import { startSweep } from "./sweep.ts";
import { TimeSeries } from "./console/timeseries.ts";
import { createTelemetry } from "./telemetry-wiring.ts";

export interface RunningPlatform {
  /** `http://127.0.0.1:<port>` */
  url: string;
  apiKey: string;
  /** Where the plain-text key is (undefined when the key was passed in). */
  apiKeyFile?: string;
  /** True when this start created the API key (first start in this folder). */
  firstStart: boolean;
  dataDir: string;
  /** Jobs found waiting or running at start (requeued). */
  recovered: { requeued: number; expired: number };
  /** For tests and benchmarks. */
  context: PlatformContext;
  close(): Promise<void>;
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off("listening", onListening);
      reject(error.code === "EADDRINUSE" ? errors.PORT_IN_USE(port, false) : error); // a given port: no fallback
    };
    const onListening = () => {
      server.off("error", onError);
      resolve((server.address() as { port: number }).port);
    };
    server.once("error", onError);
    server.once("listening", onListening);
    server.listen(port, host);
  });
}

export async function startPlatform(input: PlatformOptions): Promise<RunningPlatform> {
  const options = resolveOptions(input);
  const webhookAllow = parseWebhookAllow(options.webhookAllow); // a bad SVC_WEBHOOK_ALLOW stops the start before anything is open
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const key = options.apiKey ? { apiKey: options.apiKey, created: false, file: undefined } : ensureApiKey(options.dataDir);
  const store = createStore(join(options.dataDir, DB_FILE), {
    logLinesPerEndpoint: options.logLinesPerEndpoint,
    logCharsPerEndpoint: options.logCharsPerEndpoint,
  });
  const apiKeyHash = sha256Hex(key.apiKey);
  store.meta.set("api_key_hash", apiKeyHash);

  const volumesAt = () => store.volumes.list().map((v) => ({ id: v.id, sizeGb: v.sizeGb, dir: volumeDir(options.dataDir, v.id) }));
  let supervisor: Supervisor | undefined;
  const { telemetry, otel } = await createTelemetry(store, options.dataDir, { queue: () => queue, supervisor: () => supervisor });
  const settings = { runsyncRetentionMs: options.runsyncRetentionMs, runRetentionMs: options.runRetentionMs };
  const queue: JobQueue = new JobQueue(store.jobs, settings, {}, telemetry);
  const webhooks = createWebhookSender({
    retries: options.webhookRetries,
    delayMs: options.webhookRetryDelayMs,
    allow: webhookAllow,
    log: options.log,
  });
  const address = { baseUrl: "", workerSocket: undefined as string | undefined, channelSocket: undefined as string | undefined };
  const workerKeys = createWorkerKeys(key.apiKey, store);
  const secrets = createSecrets(options.dataDir, store);
  const remote =
    options.workers.backend === "ray"
      ? await connectRay(options.workers, () => address.baseUrl, options).catch((error) => {
          store.close();
          throw error;
        })
      : undefined;
  supervisor = new Supervisor({
    store,
    telemetry,
    queue,
    options,
    workerKeys,
    secrets,
    apiBase: () => address.baseUrl,
    workerSocket: () => address.workerSocket,
    channelSocket: () => address.channelSocket,
    remote,
  });
  supervisor.local.killOrphans(store.workers.live()); // processes a killed platform left
  store.workers.markAllStopped();
  const autoscaler = new Autoscaler(store.endpoints, queue, supervisor, options.scaleIntervalMs);
  const series = new TimeSeries(options.consoleSampleMs); // the console's charts (console/timeseries.ts)
  wireQueue(queue, supervisor, autoscaler, webhooks, series);
  const recovered = queue.recover();
  if (recovered.requeued > 0) options.log(`requeued ${recovered.requeued} job(s) that were running when the platform stopped`);

  const scheduler = createScheduler(store, queue, options.log, telemetry);
  const ctx: PlatformContext = {
    store,
    queue,
    supervisor,
    autoscaler,
    webhooks,
    options,
    apiKeyHash,
    workerKeys,
    keys: createKeys(store),
    audit: createAudit(store, options.auditRetention),
    secrets,
    scheduler,
    telemetry,
    baseUrl: () => address.baseUrl,
  };
  const servers = await serve(ctx, address, series);
  // Once nothing can fail the start (no mount left behind), before any worker binds a volume's folder:
  // workers start with the autoscaler, and no one has the platform's URL until this returns.
  await mountDisks(options.dataDir, volumesAt(), options.log);
  let closing: Promise<void> | undefined;
  const sweep = startSweep(ctx, () => closing !== undefined, servers.caps);
  autoscaler.start();
  autoscaler.tick();
  series.start(ctx);

  return {
    url: address.baseUrl,
    apiKey: key.apiKey,
    apiKeyFile: key.file ?? (options.apiKey ? undefined : join(options.dataDir, API_KEY_FILE)),
    firstStart: key.created,
    dataDir: options.dataDir,
    recovered,
    context: ctx,
    close() {
      closing ??= (async () => {
        // Graceful: the workers finish and report their running jobs while the API still listens
        // (a result sent to a closed port would be lost and its job run again); then it closes.
        autoscaler.stop();
        series.stop();
        await supervisor.drain();
        clearInterval(sweep);
        const closed = new Promise<void>((resolve) => servers.server.close(() => resolve()));
        if (address.workerSocket) servers.socketServer!.close();
        if (address.channelSocket) servers.channelServer!.close();
        servers.shells.close();
        queue.close();
        servers.server.closeAllConnections();
        servers.socketServer?.closeAllConnections();
        servers.channelServer?.closeAllConnections();
        await supervisor.close();
        webhooks.close();
        await closed;
        await unmountDisks(options.dataDir, volumesAt(), options.log);
        await otel?.shutdown(); // the last spans go out
        store.close();
      })();
      return closing;
    },
  };
}

/** What the queue tells the rest: new work to scale for, freed and cancelled workers, final results. */
function wireQueue(queue: JobQueue, supervisor: Supervisor, autoscaler: Autoscaler, webhooks: PlatformContext["webhooks"], series: TimeSeries): void {
  queue.hooks = {
    onQueued: (job) => autoscaler.onQueued(job.endpointId, job.lowPriority),
    onReleased: (workerId) => supervisor.released(workerId),
    onCancelRunning: (workerId, jobId) => supervisor.sendCancel(workerId, jobId),
    onTimedOut: (workerId, jobId) => supervisor.timedOut(workerId, jobId),
    retryPolicy: (endpointId) => supervisor.retryPolicy(endpointId),
    onFinal: (view, webhook) => {
      if (view.status === "COMPLETED") supervisor.jobCompleted(view);
      if (webhook) webhooks.send(webhook, statusBody(view));
      series.jobFinished(view);
    },
  };
}

/**
 * The HTTP API on the options' host and port (and, on Linux, an abstract Unix socket for local
 * workers); fills `address` once listening. On a listen error the supervisor and store close.
 */
async function serve(
  ctx: PlatformContext,
  address: { baseUrl: string; workerSocket?: string; channelSocket?: string },
  series: TimeSeries,
): Promise<{ server: Server; socketServer?: Server; channelServer?: Server; shells: ShellRoute; caps: ConnectionCaps }> {
  const { options, queue, supervisor, autoscaler, store } = ctx;
  const { app, limiter, hot, identify } = createApi(ctx, series, {
    async endpointRemoved(endpointId) {
      const workers = supervisor.forEndpoint(endpointId);
      queue.removeEndpoint(endpointId);
      for (const w of workers) void supervisor.stop(w, "endpoint deleted");
      limiter.forget(endpointId);
    },
    endpointChanged(endpointId) {
      autoscaler.kick(endpointId);
    },
  });

  const handler = toNodeHandler(app);
  const s3 = createS3Api(ctx); // the volumes' S3 API under /s3 signs with its own keys (docs/volumes.md)
  // One client cannot take the connections everyone else needs (./api/connection-caps.ts), counted
  // by the identity its credential proves (./api/connection-identity.ts).
  const caps = new ConnectionCaps(raiseDescriptorLimit(options.connectionLimits, options.log), createIdentify(ctx, s3, identify));
  const newServer = () => {
    const checkMs = Math.min(30_000, Math.max(100, Math.floor(options.connectionLimits.requestMs / 4))); // how often Node checks requestMs
    const s = createServer({ keepAliveTimeout: 65_000, connectionsCheckingInterval: checkMs }, (req, res) => {
      if (!caps.admit(req, res)) return;
      if (s3.owns(req.url)) s3.handle(req, res);
      else if (!hot(req, res)) void handler(req, res);
    });
    s.headersTimeout = 66_000;
    caps.attach(s);
    return s;
  };
  const server = newServer();
  const shells = createShellRoute(ctx); // `svc shell` upgrades its request (./api/shell-route.ts); workers' socket takes none
  server.on("upgrade", shells.upgrade);
  let port: number;
  try {
    port = await listen(server, options.port, options.host);
  } catch (error) {
    await supervisor.close();
    store.close();
    throw error;
  }
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  address.baseUrl = `http://${host}:${port}`;
  // Local workers reach the same API over an abstract Unix socket (Linux; the sandbox shares the
  // network namespace): a request costs less than over TCP loopback. docs/platform.md, "Hot path".
  const socketServer = process.platform === "linux" ? newServer() : undefined;
  if (socketServer) {
    const name = `svc-platform-${process.pid}-${port}`;
    try {
      await new Promise<void>((resolve, reject) => socketServer.once("error", reject).listen({ path: `\0${name}` }, () => resolve()));
      address.workerSocket = `@${name}`;
    } catch (error) {
      options.log(`workers use TCP: no Unix socket (${(error as Error).message})`);
    }
  }
  // Sandboxed workers have a network namespace of their own: they reach the API through this socket
  // bound into the sandbox (workers/worker-channel.ts; an abstract socket belongs to a namespace).
  const channelServer = socketServer && (await listenChannel(newServer(), options.dataDir, options.log));
  if (channelServer) address.channelSocket = channelServer.path;
  return { server, socketServer, channelServer: channelServer?.server, shells, caps };
}

/** The worker channel's socket at `<state>/run/platform.sock` (workers/worker-channel.ts); undefined where it cannot be. */
async function listenChannel(server: Server, dataDir: string, log: (line: string) => void): Promise<{ server: Server; path: string } | undefined> {
  const path = platformSocketPath(dataDir);
  if (!path) {
    log(`sandboxed workers keep the host's network: the state folder's path is too long for a Unix socket (${dataDir})`);
    return undefined;
  }
  try {
    runDir(dataDir);
    rmSync(path, { force: true }); // a platform that stopped without closing leaves its socket
    await listenUnix(server, path); // the address a worker can read names no folder of the host
    chmodSync(path, 0o666); // the sandbox's user connects (the folder above keeps everyone else out)
    return { server, path };
  } catch (error) {
    log(`sandboxed workers keep the host's network: no worker socket at ${path} (${(error as Error).message})`);
    return undefined;
  }
}
