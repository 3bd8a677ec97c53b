/**
 * svc:dev-server — `svc run` (spec 4.3). A local HTTP server in front of `live-` endpoints that run
 * on the platform, rebuilt incrementally through the same pipeline as `svc build` on every change.
 *
 * One session:
 *   1. one authenticated call (listEndpoints) before anything else: a refused key is AUTH_FAILED
 *      and the server never says it is ready;
 *   2. the pipeline up to configure, with svc:upload / svc:provision / svc:configure replaced by
 *      this plugin's taps: the dev build goes into the app's builds but never becomes an
 *      environment's active build, and endpoints are the session's `live-` ones;
 *   3. lazy mode deploys an endpoint on the first call of its function; `--auto-provision` deploys
 *      all at startup, 3 at a time, asking first when more than 5 would be created or changed;
 *   4. file changes re-run the pipeline (discovery cache, deps cache, upload skipped on an unchanged
 *      artifact) and move the provisioned endpoints to the new build;
 *   5. the provisioned endpoints' worker output (print(), tracebacks) is printed as it comes,
 *      prefixed by endpoint name (docs/dev-server.md, "Worker logs");
 *   6. close() deletes the `live-` endpoints and their resource-cache entries.
 */
import { createBuildPipeline } from "./build.ts";
import { createLogger, formatMs, paint, type Logger } from "../../core/logger.ts";
import type { PlatformClient } from "../../core/client/index.ts";
import type { BuildContext, DeployedEndpoint, DiscoveredFunction, Manifest, SvcPlugin } from "../../core/types.ts";
import { errors } from "../../core/errors.ts";
import { sharedParser } from "../discover-python/index.ts";
import { LIVE_PREFIX } from "../provision.ts";
import { shortSha, uploadedLine } from "../upload.ts";
import { Provisioner, type EndpointStatus } from "./provisioner.ts";
import { createDevApp, type DevRoutesState, type RemoteRef } from "./routes.ts";
import { buildRouteTable, preferredAlias, type RouteTable } from "./routes-table.ts";
import { serve, type Served } from "./server.ts";
import { watchProject, type ProjectWatcher, DEBOUNCE_MS } from "./watcher.ts";
import type { Job } from "./input.ts";
import { followWorkerLogs, type WorkerLogFollower } from "./worker-logs.ts";
import { liveProxyUrl } from "./live-proxy.ts";

export const PLUGIN_NAME = "svc:dev-server";
/** How long `POST /<module>/runsync` waits for a final job before answering 202 (cold starts included). */
export const DEFAULT_SYNC_TIMEOUT_MS = 300_000;
/** More endpoints than this to create or change at startup → ask first (spec 4.3 rule 2). */
export const CONFIRM_THRESHOLD = 5;

export { buildRouteTable, resolveRoute, preferredAlias } from "./routes-table.ts";
export { generateOpenApi } from "./openapi.ts";
export { parseRunsyncBody } from "./input.ts";
export { RESOURCE_CACHE_FILE, readResourceCache, configHash } from "./resource-cache.ts";

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

export interface ReloadReport {
  ok: boolean;
  files: string[];
  ms: number;
  buildId?: string;
  uploadSkipped?: boolean;
  /** Python files discovery actually re-parsed. */
  parsedFiles?: number;
  updated: string[];
  added: string[];
  removed: string[];
  error?: { code?: string; message: string };
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

interface Session {
  upload(ctx: BuildContext): Promise<string>;
  provision(ctx: BuildContext): Promise<DeployedEndpoint[]>;
  configure(ctx: BuildContext): Promise<void>;
}

/** The plugin: replaces svc:upload, svc:provision and svc:configure for a dev session. */
export function devServerPlugin(session: Session): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.upload.tapPromise(PLUGIN_NAME, (_buildId, ctx) => session.upload(ctx));
      pipeline.hooks.provision.tapPromise(PLUGIN_NAME, (_deployed, ctx) => session.provision(ctx));
      pipeline.hooks.configure.tapPromise(PLUGIN_NAME, (_deployed, ctx) => session.configure(ctx));
    },
  };
}

const isLoopback = (url: string) => ["127.0.0.1", "localhost", "[::1]"].includes(new URL(url).hostname);

/** A logger that keeps warnings and errors but not the per-stage lines (reloads print one line). */
function quiet(base: Logger): Logger {
  const logger = createLogger("warn", () => {});
  return { ...logger, warn: (m) => base.warn(m), error: (m) => base.error(m), debug: (m) => base.debug(m), info: (m) => base.debug(m) };
}

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const logger = options.logger ?? createLogger("info");
  const { client, root } = options;
  const host = options.host ?? "localhost";
  const reloadEnabled = options.reload ?? true;
  const autoProvision = options.autoProvision ?? false;
  const prefix = LIVE_PREFIX;

  // 1. The key, before anything prints "ready" (users' complaint: success printed with a bad key).
  const existing = await client.listEndpoints();

  const provisioner = new Provisioner({ root, platform: client, logger });
  let started = false;
  let manifest: Manifest | undefined;
  let functions: DiscoveredFunction[] = [];
  let table: RouteTable | undefined;
  let buildId: string | undefined;
  let artifactSha: string | undefined;
  let appId: { name: string; id: string } | undefined;
  let lastReload: ReloadReport | undefined;
  let lastUploadSkipped = false;

  const session: Session = {
    async upload(ctx) {
      if (!ctx.artifact || !ctx.manifest) throw errors.BUILD_MISSING(ctx.root);
      if (buildId && artifactSha === ctx.artifact.sha256) {
        lastUploadSkipped = true;
        ctx.upload = { buildId, skipped: true };
        ctx.logger.info(`  artifact ${shortSha(ctx.artifact.sha256)} unchanged: upload skipped`);
        return buildId;
      }
      const name = ctx.manifest.app;
      if (appId?.name !== name) {
        const app = (await client.getApp(name)) ?? (await client.createApp(name));
        appId = { name, id: app.id };
      }
      const result = await client.uploadArtifact(appId.id, ctx.artifact, ctx.manifest);
      lastUploadSkipped = result.skipped;
      ctx.upload = { buildId: result.buildId, skipped: result.skipped };
      ctx.logger.info(uploadedLine(ctx.artifact.sha256, result.skipped));
      return result.buildId;
    },
    async provision(ctx) {
      const newManifest = ctx.manifest!;
      const newBuild = ctx.buildId!;
      if (!started) {
        await provisioner.init(newManifest, newBuild, existing);
        if (autoProvision) {
          const plan = provisioner.plan();
          const changes = plan.filter((step) => step.action !== "reuse");
          if (changes.length > CONFIRM_THRESHOLD && !options.yes) {
            const question = `Deploy ${changes.length} ${prefix} endpoints (${changes.map((c) => c.endpoint).join(", ")}) to ${client.url}?`;
            const action = `deploy ${changes.length} ${prefix} endpoints`;
            if (!options.confirm) throw errors.CONFIRMATION_REQUIRED(action);
            if (!(await options.confirm(question))) {
              throw errors.CONFIRMATION_DECLINED(action, "Run `svc run` without --auto-provision to deploy each endpoint on its first call, or answer y (or pass --yes) to deploy them all now.");
            }
          }
          const reused = plan.filter((step) => step.action === "reuse").map((step) => `${prefix}${step.endpoint}`);
          if (reused.length) ctx.logger.info(`  reusing cached ${reused.join(", ")}`);
          await provisioner.provisionAll();
        } else {
          await provisioner.applyBuild(newManifest, newBuild);
        }
      } else {
        const changes = await provisioner.applyBuild(newManifest, newBuild);
        ctx.meta.set(PLUGIN_NAME, changes);
      }
      return provisioner.status().filter((s) => s.id && s.url).map((s) => ({ name: s.name, id: s.id!, type: s.type, url: s.url! }));
    },
    async configure(ctx) {
      await recordUrls(ctx.buildId!);
    },
  };

  /** Set once the server listens: the URL recorded for endpoints not yet deployed (live-proxy.ts). */
  let proxyBase: string | undefined;

  async function recordUrls(build: string) {
    const lazy = proxyBase ? Object.fromEntries(provisioner.endpointNames().map((name) => [name, liveProxyUrl(proxyBase!, name)])) : {};
    const urls = { ...lazy, ...provisioner.urls() };
    if (Object.keys(urls).length === 0) return;
    try {
      // Builds are content-addressed: an unchanged app shares its build with `svc deploy`. The
      // live- URLs must not replace a deployed environment's URLs (its cross-endpoint calls read them).
      const app = appId ? await client.getApp(appId.name) : null;
      if (app?.environments.some((env) => env.activeBuildId === build)) {
        logger.debug(`build ${build} is active in an environment: live- URLs not recorded on it`);
        return;
      }
      await client.setBuildEndpointUrls(build, urls);
    } catch (error) {
      logger.warn(`could not record the live- endpoint URLs on build ${build}: ${(error as Error).message}`);
    }
  }

  /**
   * A FAILED job's body does not say whether the function rejected its input: the platform says it
   * with HTTP 400 on runsync / status-sync, which the client's runsync does not pass on. One
   * status-sync call on the (final) job answers at once with that code.
   */
  async function finalHttpStatus(remote: RemoteRef, job: Job): Promise<number | undefined> {
    if (job.status !== "FAILED") return undefined;
    try {
      const res = await fetch(`${remote.url}/status-sync/${encodeURIComponent(job.id)}?wait=1000`, {
        headers: { authorization: `Bearer ${client.apiKey}`, accept: "application/json" },
        signal: AbortSignal.timeout(5000),
      });
      await res.arrayBuffer();
      return res.status === 400 || res.status === 200 ? res.status : undefined;
    } catch {
      return undefined;
    }
  }

  const build = createBuildPipeline({ root, prefix, plugin: devServerPlugin(session), extraPlugins: options.plugins ?? [] });

  function adopt(ctx: BuildContext) {
    manifest = ctx.manifest!;
    functions = ctx.functions;
    table = buildRouteTable(manifest);
    buildId = ctx.buildId!;
    artifactSha = ctx.artifact!.sha256;
  }

  // 2 + 3. First build, upload, provisioning (auto) — failures here end the command.
  const startedAt = performance.now();
  const sessionStart = new Date().toISOString();
  let served: Served | undefined;
  let watcher: ProjectWatcher | undefined;
  try {
    const ctx = await build(logger);
    adopt(ctx);
    started = true;

    const state: DevRoutesState = {
      manifest: () => manifest!,
      table: () => table!,
      functions: () => functions,
      health: () => health(),
      async ensure(endpoint): Promise<RemoteRef> {
        const known = provisioner.remoteOf(endpoint);
        const remote = await provisioner.ensure(endpoint);
        if (!known || known.id !== remote.id) void recordUrls(buildId!);
        return remote;
      },
      async runsync(remote, input, timeoutMs) {
        const job = await client.runsync(remote.url || remote.id, input, {
          timeoutMs,
          onPending: (pending) => logger.debug(`job ${pending.id}: ${pending.status}`),
        });
        return { job, httpStatus: await finalHttpStatus(remote, job) };
      },
      async status(remote, jobId) {
        const job = await client.status(remote.url || remote.id, jobId);
        return { job, httpStatus: await finalHttpStatus(remote, job) };
      },
      lbRequest: (remote, method, path, body, headers) => client.lbRequest(remote.url, method, path, body, headers),
      syncTimeoutMs: options.syncTimeoutMs ?? DEFAULT_SYNC_TIMEOUT_MS,
    };
    served = await serve(createDevApp(state), { host, port: options.port ?? 8888 });
    if (served.fallback) logger.warn(`port ${served.requestedPort} is in use; using port ${served.port} instead`);
    if (reloadEnabled) {
      watcher = await watchProject({
        root,
        ignore: ctx.config.ignore,
        debounceMs: options.debounceMs ?? DEBOUNCE_MS,
        onChange: (files) => void scheduleReload(files),
        onError: (error) => logger.warn(`watcher: ${(error as Error).message}`),
      });
      await watcher.ready;
    }
  } catch (error) {
    await served?.close().catch(() => {});
    await watcher?.close().catch(() => {});
    // Endpoints deployed before the failure must not be left running.
    await provisioner.teardown().catch(() => {});
    throw error;
  }

  const url = served.url;
  // Workers on this machine reach the dev server, so a call to an endpoint not yet deployed can
  // deploy it (lazy mode); a remote platform's workers cannot, and wait for --auto-provision.
  if (isLoopback(client.url)) {
    proxyBase = url;
    await recordUrls(buildId!);
  }
  printBanner();
  const workerLogs = streamWorkerLogs();

  // 4. Reloads: one at a time; changes that arrive meanwhile are batched into the next one.
  let running: Promise<ReloadReport> | undefined;
  let queued: Set<string> | undefined;
  let queuedRun: Promise<ReloadReport> | undefined;
  const waiters: Array<(report: ReloadReport) => void> = [];
  let closing = false;

  function scheduleReload(files: string[]): Promise<ReloadReport> {
    if (running) {
      queued ??= new Set();
      for (const file of files) queued.add(file);
      queuedRun ??= running.then(() => {
        const next = [...(queued ?? [])].sort();
        queued = undefined;
        queuedRun = undefined;
        return closing ? lastReload! : scheduleReload(next);
      });
      return queuedRun;
    }
    running = doReload(files).finally(() => {
      running = undefined;
    });
    return running;
  }

  async function doReload(files: string[]): Promise<ReloadReport> {
    const t0 = performance.now();
    const parsedBefore = sharedParser().parsedFiles;
    const shown = files.length > 3 ? `${files.slice(0, 3).join(", ")} and ${files.length - 3} more` : files.join(", ");
    logger.info(`↻ ${shown || "reload"} changed, rebuilding…`);
    let report: ReloadReport;
    try {
      if (files.some((file) => file === ".gitignore" || file === ".svcignore" || /^svc\.config\.[mc]?[jt]s$/.test(file))) {
        await watcher?.refreshIgnores();
      }
      const ctx = await build(quiet(logger));
      const changes = (ctx.meta.get(PLUGIN_NAME) as { updated: string[]; added: string[]; removed: string[] } | undefined) ?? { updated: [], added: [], removed: [] };
      adopt(ctx);
      report = {
        ok: true,
        files,
        ms: performance.now() - t0,
        buildId,
        uploadSkipped: lastUploadSkipped,
        parsedFiles: sharedParser().parsedFiles - parsedBefore,
        ...changes,
      };
      const parts = [
        report.uploadSkipped ? "artifact unchanged" : `build ${buildId}`,
        report.updated.length ? `updated ${report.updated.map((n) => prefix + n).join(", ")}` : "",
        report.added.length ? `new ${report.added.join(", ")} (lazy)` : "",
        report.removed.length ? `removed ${report.removed.map((n) => prefix + n).join(", ")}` : "",
      ].filter(Boolean);
      logger.info(`✓ reloaded in ${formatMs(report.ms)}: ${parts.join("; ")}`);
    } catch (error) {
      const e = error as Error & { code?: string };
      report = { ok: false, files, ms: performance.now() - t0, updated: [], added: [], removed: [], error: { code: e.code, message: e.message } };
      logger.error(`reload failed${e.code ? ` [${e.code}]` : ""}: ${e.message}\n  the previous build keeps serving; fix the file and save again.`);
    }
    lastReload = report;
    for (const resolve of waiters.splice(0)) resolve(report);
    return report;
  }

  function endpointPaths(name: string): string[] {
    const paths: string[] = [];
    for (const entry of table!.modules.values()) {
      const alias = preferredAlias(table!, entry.module);
      for (const t of entry.qb) if (t.endpoint === name) paths.push(`POST /${alias}${entry.qb.length > 1 ? `/${t.function}` : ""}/runsync`);
      for (const r of entry.lb) if (r.endpoint === name) paths.push(`${r.method} /${alias}${r.path}`);
    }
    return paths;
  }

  function health(): Record<string, unknown> {
    const endpoints = provisioner.status().map((s: EndpointStatus) => ({
      ...s,
      module: manifest!.endpoints[s.name]?.module,
      routes: endpointPaths(s.name),
    }));
    return {
      status: lastReload && !lastReload.ok ? "degraded" : "ok",
      app: manifest!.app,
      platform: client.url,
      mode: autoProvision ? "auto-provision" : "lazy",
      reload: reloadEnabled,
      buildId,
      artifact: artifactSha,
      ...(lastReload ? { lastReload } : {}),
      endpoints,
    };
  }

  function printBanner() {
    const lines = [
      `svc dev server ready in ${formatMs(performance.now() - startedAt)} at ${url}`,
      `  app ${manifest!.app} · platform ${client.url} · ${autoProvision ? "auto-provision" : "lazy provisioning"} · ${reloadEnabled ? "reload on" : "reload off"}`,
    ];
    for (const s of provisioner.status()) {
      for (const path of endpointPaths(s.name)) {
        const [method, route] = path.split(" ");
        lines.push(`  ${method!.padEnd(6)} ${url}${route}  → ${prefix}${s.name} (${s.type}, ${s.state})`);
      }
    }
    lines.push(`  docs   ${url}/docs`);
    logger.info(lines.join("\n"));
  }

  /** 5. Each provisioned endpoint's new worker lines, as `[name] line`. */
  function streamWorkerLogs(): WorkerLogFollower {
    let failing = false;
    return followWorkerLogs(client, {
      since: sessionStart,
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

  let closed: Promise<void> | undefined;
  return {
    url,
    port: served.port,
    requestedPort: served.requestedPort,
    provisioner,
    reload: (files = []) => scheduleReload(files),
    nextReload: () => new Promise<ReloadReport>((resolve) => waiters.push(resolve)),
    health,
    close(closeOptions = {}) {
      closed ??= (async () => {
        closing = true;
        await watcher?.close().catch(() => {});
        await served!.close().catch(() => {});
        await running?.catch(() => {});
        await workerLogs.stop().catch(() => {});
        if (!closeOptions.keepEndpoints) {
          await provisioner.teardown();
        }
      })();
      return closed;
    },
  };
}
