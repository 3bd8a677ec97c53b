/**
 * The dev server — `svc run` (spec 4.3, docs/dev-server.md). A local HTTP server in front of
 * `live-` endpoints that run on the platform, rebuilt through the same pipeline as `svc build`
 * on every change. This file wires one session; each job has its own module:
 *
 *   provisioning/  the deploy steps svc:dev-server's taps run (upload, `live-` endpoints, URLs),
 *                  the Provisioner (lazy / --auto-provision, at most 3 at a time) and its cache
 *   reload*.ts     the rebuild on change, one at a time, changes batched
 *   health.ts      `GET /` and the ready banner
 *   routes/        the HTTP routes (runsync, status, load-balanced proxy, docs, live proxy)
 *   (the endpoints' worker output comes through core/client/worker-logs.ts, as for `svc logs`)
 *
 * One session: (1) one authenticated call before anything else (a refused key is AUTH_FAILED and
 * the server never says it is ready); (2) the first build, up to configure; (3) serve and watch;
 * (4) reload on change; (5) close() deletes the `live-` endpoints.
 */
import { LIVE_PREFIX, type PlatformClient } from "../core/client/index.ts";
import { createLogger, formatMs, paint, type Logger } from "../core/logger.ts";
import type { SvcPlugin } from "../core/types.ts";
import { devServerPlugin } from "../plugins/index.ts";
import { createBuildPipeline } from "./build.ts";
import { CurrentBuild } from "./current-build.ts";
import { bannerLines, healthReport, type HealthSources } from "./health.ts";
import { createDeploySteps, type DeploySteps } from "./provisioning/deploy-steps.ts";
import { Provisioner } from "./provisioning/provisioner.ts";
import { createReloadQueue, type ReloadQueue } from "./reload-queue.ts";
import { createReloader, type ReloadReport } from "./reload.ts";
import { createPlatformApp } from "./platform-calls.ts";
import { serve, type Served } from "./server.ts";
import { DEBOUNCE_MS, watchProject, type ProjectWatcher } from "./watcher.ts";
import { followWorkerLogs, type WorkerLogFollower } from "../core/client/worker-logs.ts";

/** How long `POST /<module>/runsync` waits for a final job before answering 202 (cold starts included). */
export const DEFAULT_SYNC_TIMEOUT_MS = 300_000;

export { CONFIRM_THRESHOLD } from "./provisioning/deploy-steps.ts";
export { DEV_SERVER_PLUGIN as PLUGIN_NAME } from "../plugins/index.ts";
export type { ReloadReport } from "./reload.ts";

export interface DevServerOptions {
  root: string;
  client: PlatformClient;
  host?: string;
  /** Default 8888; 0 = any free port. */
  port?: number;
  /** Watch and reload (default true). */
  reload?: boolean;
  autoProvision?: boolean;
  /** Skip the > 5 endpoints confirmation. */
  yes?: boolean;
  /** Asks the user (y/N). Not given: without `yes`, more than 5 endpoints is CONFIRMATION_REQUIRED. */
  confirm?: (question: string) => Promise<boolean>;
  logger?: Logger;
  debounceMs?: number;
  syncTimeoutMs?: number;
  /** Extra pipeline plugins (tests). */
  plugins?: SvcPlugin[];
}

export interface DevServer {
  url: string;
  port: number;
  requestedPort: number;
  provisioner: Provisioner;
  /** Rebuilds now (what a file change does after the debounce). */
  reload(files?: string[]): Promise<ReloadReport>;
  /** Resolves after the next reload finishes (tests). */
  nextReload(): Promise<ReloadReport>;
  health(): Record<string, unknown>;
  /** Stops watching and serving; deletes the `live-` endpoints unless `keepEndpoints`. */
  close(options?: { keepEndpoints?: boolean }): Promise<void>;
}

const isLoopback = (url: string) => ["127.0.0.1", "localhost", "[::1]"].includes(new URL(url).hostname);

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const logger = options.logger ?? createLogger("info");
  const { client, root } = options;
  const reloadEnabled = options.reload ?? true;
  const autoProvision = options.autoProvision ?? false;

  // 1. The key, before anything prints "ready" (users' complaint: success printed with a bad key).
  const existing = await client.listEndpoints();

  const provisioner = new Provisioner({ root, platform: client, logger });
  const steps = createDeploySteps({ client, provisioner, logger, autoProvision, yes: options.yes ?? false, confirm: options.confirm, existing });
  const build = createBuildPipeline({ root, prefix: LIVE_PREFIX, plugin: devServerPlugin(steps), extraPlugins: options.plugins ?? [], client });
  const current = new CurrentBuild();
  let watcher: ProjectWatcher | undefined;
  const reloads = createReloadQueue(createReloader({ build, current, logger, watcher: () => watcher }));
  const sources: HealthSources = { current, provisioner, client, autoProvision, reload: reloadEnabled, lastReload: reloads.last };
  const health = () => healthReport(sources);

  // 2 + 3. First build, upload, provisioning (auto), serving — failures here end the command.
  const startedAt = performance.now();
  const sessionStart = new Date().toISOString();
  let served: Served | undefined;
  try {
    const ctx = await build(logger);
    current.adopt(ctx);
    const app = createPlatformApp({
      client,
      current,
      provisioner,
      logger,
      health,
      onDeployed: () => void steps.recordUrls(current.buildId),
      syncTimeoutMs: options.syncTimeoutMs ?? DEFAULT_SYNC_TIMEOUT_MS,
    });
    served = await serve(app, { host: options.host ?? "localhost", port: options.port ?? 8888 });
    if (served.fallback) logger.warn(`port ${served.requestedPort} is in use; using port ${served.port} instead`);
    if (reloadEnabled) {
      watcher = await watchProject({
        root,
        ignore: ctx.config.ignore,
        debounceMs: options.debounceMs ?? DEBOUNCE_MS,
        onChange: (files) => void reloads.schedule(files),
        onError: (error) => logger.warn(`watcher: ${(error as Error).message}`),
      });
      await watcher.ready;
    }
    // Workers on this machine reach the dev server, so a call to an endpoint not yet deployed can
    // deploy it (lazy mode); a remote platform's workers cannot (docs/dev-server.md, "Cross-endpoint calls").
    if (isLoopback(client.url)) await steps.useLiveProxy(served.url, current.buildId);
  } catch (error) {
    await served?.close().catch(() => {});
    await watcher?.close().catch(() => {});
    // Endpoints deployed before the failure must not be left running, nor an app made for them.
    await provisioner.teardown().catch(() => {});
    await steps.removeCreatedApps().catch(() => {});
    throw error;
  }

  const url = served.url;
  logger.info(bannerLines(sources, url, formatMs(performance.now() - startedAt)).join("\n"));
  const workerLogs = printWorkerLogs(client, provisioner, logger, sessionStart);

  let closed: Promise<void> | undefined;
  return {
    url,
    port: served.port,
    requestedPort: served.requestedPort,
    provisioner,
    reload: (files = []) => reloads.schedule(files),
    nextReload: reloads.next,
    health,
    close(closeOptions = {}) {
      closed ??= closeSession({ reloads, watcher, served: served!, workerLogs, provisioner, steps }, closeOptions.keepEndpoints ?? false);
      return closed;
    },
  };
}

/** What a session holds, stopped in this order; the `live-` endpoints and the apps made for them last, unless kept. */
async function closeSession(
  session: {
    reloads: ReloadQueue<ReloadReport>;
    watcher?: ProjectWatcher;
    served: Served;
    workerLogs: WorkerLogFollower;
    provisioner: Provisioner;
    steps: DeploySteps;
  },
  keepEndpoints: boolean,
): Promise<void> {
  const reloadsDone = session.reloads.close(); // at once: a batch queued from now on does not run
  await session.watcher?.close().catch(() => {});
  await session.served.close().catch(() => {});
  await reloadsDone;
  await session.workerLogs.stop().catch(() => {});
  if (keepEndpoints) return;
  await session.provisioner.teardown();
  await session.steps.removeCreatedApps();
}

/** Each deployed endpoint's new worker lines, as `[name] line` (docs/dev-server.md, "Worker logs"). */
function printWorkerLogs(client: PlatformClient, provisioner: Provisioner, logger: Logger, since: string): WorkerLogFollower {
  let failing = false;
  return followWorkerLogs(client, {
    since,
    targets: () => provisioner.status().flatMap((s) => (s.id ? [{ endpointId: s.id, label: s.name }] : [])),
    onLine: (target, line) => {
      failing = false;
      logger.info(`${paint(36, `[${target.label}]`)} ${line.line}`);
    },
    onError: (error) => {
      if (!failing) logger.warn(`worker logs: ${(error as Error).message}`);
      failing = true;
    },
  });
}
