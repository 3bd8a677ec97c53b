/**
 * The deploy steps of a dev build, run by svc:dev-server's taps (docs/dev-server.md, "Startup"):
 * upload into the app's builds without activating the build; `live-` endpoints through the
 * Provisioner (lazy, or all at startup with --auto-provision, asking first when more than 5 would
 * be created or changed); the endpoints' URLs recorded on the build for cross-endpoint calls —
 * a deployed endpoint's platform URL, or for one not deployed yet the dev server's live proxy.
 * A restart whose artifact is the one an earlier session's cached endpoints run reuses that build:
 * nothing is uploaded and the unchanged endpoints are not touched (spec: resources are reused
 * across restarts).
 * An app this session had to create is deleted again when it stops (`removeCreatedApps`), unless
 * something else uses it by then: an environment (a deploy), or endpoints running its builds
 * (another `svc run` of the same app) (docs/dev-server.md, "Stop").
 */
import { LIVE_PREFIX, type PlatformClient } from "../../core/client/index.ts";
import { errors } from "../../core/errors.ts";
import type { Logger } from "../../core/logger.ts";
import type { Manifest } from "../../core/types.ts";
import { DEV_SERVER_PLUGIN, shortSha, uploadedLine, type DevDeploySteps } from "../../plugins/index.ts";
import { liveProxyUrl } from "../live-proxy-url.ts";
import type { Provisioner, RemoteEndpoint } from "./provisioner.ts";
import { cachedFor, readResourceCache } from "./resource-cache.ts";

/** More endpoints than this to create or change at startup → ask first (spec 4.3 rule 2). */
export const CONFIRM_THRESHOLD = 5;

export interface DeployStepsOptions {
  client: PlatformClient;
  provisioner: Provisioner;
  logger: Logger;
  autoProvision: boolean;
  /** Skip the > 5 endpoints confirmation. */
  yes: boolean;
  /** Asks the user (y/N). Not given: without `yes`, more than 5 endpoints is CONFIRMATION_REQUIRED. */
  confirm?: (question: string) => Promise<boolean>;
  /** The platform's endpoints when the session started (the resource cache is checked against them). */
  existing: RemoteEndpoint[];
}

export interface DeploySteps extends DevDeploySteps {
  recordUrls(buildId: string): Promise<void>;
  /** From now on, endpoints not deployed yet get the dev server's live-proxy URL (workers on this machine). */
  useLiveProxy(devServerUrl: string, buildId: string): Promise<void>;
  /** After the `live-` endpoints are gone: deletes the apps this session created (and their dev builds). */
  removeCreatedApps(): Promise<void>;
}

export function createDeploySteps(options: DeployStepsOptions): DeploySteps {
  const { client, provisioner, logger } = options;
  let started = false;
  let lastUpload: { sha256: string; buildId: string } | undefined;
  let app: { name: string; id: string } | undefined;
  const createdApps: Array<{ name: string; id: string }> = [];
  let proxyBase: string | undefined;
  /** The URLs last recorded, and on which build: the same again is not sent. */
  let recorded: string | undefined;

  /** What `recorded` holds for `urls` recorded on `buildId`. */
  const recordedKey = (buildId: string, urls: Record<string, string>) => JSON.stringify([buildId, urls]);

  /** The URLs of `names`: deployed endpoints' platform URLs, the live proxy's for the rest (once it is known). */
  function urlsOf(names: readonly string[]): Record<string, string> {
    const deployed = provisioner.urls();
    const urls: Record<string, string> = {};
    for (const name of names) {
      const url = deployed[name] ?? (proxyBase ? liveProxyUrl(proxyBase, name) : undefined);
      if (url) urls[name] = url;
    }
    return urls;
  }

  /**
   * Records the URLs of `names` (the current manifest's endpoints) on the build: deployed ones'
   * platform URLs, the live proxy's for the rest. `uploadedNow`: this reload's upload created the
   * build a moment ago, so no environment can run it yet and the check for one is skipped (an app
   * query, 15-35 ms of an edit's reload here).
   */
  async function recordUrls(buildId: string, names = provisioner.endpointNames(), uploadedNow = false): Promise<void> {
    const urls = urlsOf(names);
    if (Object.keys(urls).length === 0) return;
    const key = recordedKey(buildId, urls);
    if (key === recorded) return;
    try {
      // Builds are content-addressed: an unchanged app shares its build with `svc deploy`. The
      // live- URLs must not replace a deployed environment's URLs (its cross-endpoint calls read them).
      const found = app && !uploadedNow ? await client.getApp(app.name) : null;
      if (found?.environments.some((env) => env.activeBuildId === buildId)) {
        logger.debug(`build ${buildId} is active in an environment: live- URLs not recorded on it`);
        return;
      }
      await client.setBuildEndpointUrls(buildId, urls);
      recorded = key;
    } catch (error) {
      logger.warn(`could not record the live- endpoint URLs on build ${buildId}: ${(error as Error).message}`);
    }
  }

  return {
    async upload(ctx) {
      if (!ctx.artifact || !ctx.manifest) throw errors.BUILD_MISSING(ctx.root);
      if (!lastUpload) {
        const reused = await cachedBuild(client, ctx.root, ctx.manifest.app, ctx.artifact.sha256);
        if (reused) {
          app = { name: ctx.manifest.app, id: reused.appId };
          lastUpload = { sha256: ctx.artifact.sha256, buildId: reused.id };
          ctx.upload = { buildId: reused.id, skipped: true };
          ctx.logger.info(`  artifact ${shortSha(ctx.artifact.sha256)} unchanged since the last svc run: reusing its build ${reused.id}`);
          return reused.id;
        }
      }
      if (lastUpload?.sha256 === ctx.artifact.sha256) {
        ctx.upload = { buildId: lastUpload.buildId, skipped: true };
        ctx.logger.info(`  artifact ${shortSha(ctx.artifact.sha256)} unchanged: upload skipped`);
        return lastUpload.buildId;
      }
      const name = ctx.manifest.app;
      if (app?.name !== name) {
        const found = await client.getApp(name);
        app = { name, id: (found ?? (await client.createApp(name))).id };
        if (!found) createdApps.push(app);
      }
      // The build's URLs go in the manifest it is made with (the build's stored manifest holds them,
      // as getBuild answers it): its first worker finds them, and the reload saves a request for them.
      const urls = urlsOf(Object.keys(ctx.manifest.endpoints).sort());
      const withUrls = Object.keys(urls).length > 0;
      const result = await client.uploadArtifact(app.id, ctx.artifact, withUrls ? { ...ctx.manifest, urls } : ctx.manifest);
      if (withUrls) recorded = recordedKey(result.buildId, urls);
      lastUpload = { sha256: ctx.artifact.sha256, buildId: result.buildId };
      ctx.upload = { buildId: result.buildId, skipped: result.skipped };
      ctx.logger.info(uploadedLine(ctx.artifact.sha256, result.skipped));
      return result.buildId;
    },
    async provision(ctx) {
      const manifest = ctx.manifest!;
      const buildId = ctx.buildId!;
      const volumeIds = ctx.meta.get("svc:volume-refs") ?? {}; // what svc:volume-refs found in this build
      if (!started) {
        await provisionAtStartup(options, manifest, buildId, volumeIds, ctx.logger);
        started = true;
      } else {
        // Before the endpoints move: a worker of the new build may start at once (a warm spare,
        // docs/platform.md) and the URLs decide which of the dev server's ports it can reach.
        await recordUrls(buildId, Object.keys(manifest.endpoints).sort(), ctx.upload?.skipped === false);
        ctx.meta.set(DEV_SERVER_PLUGIN, await provisioner.applyBuild(manifest, buildId, volumeIds));
      }
      return provisioner.status().flatMap((s) => (s.id && s.url ? [{ name: s.name, id: s.id, type: s.type, url: s.url }] : []));
    },
    configure: (ctx) => recordUrls(ctx.buildId!),
    recordUrls,
    async useLiveProxy(devServerUrl, buildId) {
      proxyBase = devServerUrl;
      await recordUrls(buildId);
    },
    removeCreatedApps: () => removeUnusedApps(client, logger, createdApps.splice(0)),
  };
}

/** The first provision of a session: every endpoint now (--auto-provision, asking first), else the build recorded for lazy deploys. */
async function provisionAtStartup(
  options: DeployStepsOptions,
  manifest: Manifest,
  buildId: string,
  volumeIds: Record<string, string>,
  logger: Logger,
): Promise<void> {
  const { provisioner } = options;
  await provisioner.init(manifest, buildId, options.existing, volumeIds);
  if (!options.autoProvision) {
    await provisioner.applyBuild(manifest, buildId, volumeIds);
    return;
  }
  await confirmStartup(options);
  const reused = provisioner
    .plan()
    .filter((step) => step.action === "reuse")
    .map((step) => `${LIVE_PREFIX}${step.endpoint}`);
  if (reused.length) logger.info(`  reusing cached ${reused.join(", ")}`);
  await provisioner.provisionAll();
}

/** At startup with --auto-provision: more than CONFIRM_THRESHOLD endpoints to create or change → ask first. */
async function confirmStartup(options: DeployStepsOptions): Promise<void> {
  const { client, provisioner } = options;
  const changes = provisioner.plan().filter((step) => step.action !== "reuse");
  if (changes.length <= CONFIRM_THRESHOLD || options.yes) return;
  const action = `deploy ${changes.length} ${LIVE_PREFIX} endpoints`;
  if (!options.confirm) throw errors.CONFIRMATION_REQUIRED(action);
  const question = `Deploy ${changes.length} ${LIVE_PREFIX} endpoints (${changes.map((c) => c.endpoint).join(", ")}) to ${client.url}?`;
  if (!(await options.confirm(question))) {
    throw errors.CONFIRMATION_DECLINED(
      action,
      "Run `svc run` without --auto-provision to deploy each endpoint on its first call, or answer y (or pass --yes) to deploy them all now.",
    );
  }
}

/** A build of `appName` that endpoints of an earlier session run (the resource cache) with these bytes. */
async function cachedBuild(client: PlatformClient, root: string, appName: string, sha256: string): Promise<{ id: string; appId: string } | undefined> {
  const ids = new Set(cachedFor(await readResourceCache(root), client.url).flatMap((entry) => (entry.buildId ? [entry.buildId] : [])));
  const app = ids.size > 0 ? await client.getApp(appName) : null;
  for (const id of ids) {
    const build = await client.getBuild(id);
    if (build && build.appId === app?.id && build.sha256.replace(/^sha256:/, "") === sha256.replace(/^sha256:/, "")) return { id, appId: build.appId };
  }
  return undefined;
}

/** Deletes each app this session created unless an environment or running endpoints use it by now. */
async function removeUnusedApps(client: PlatformClient, logger: Logger, createdApps: Array<{ name: string; id: string }>): Promise<void> {
  for (const created of createdApps) {
    const found = await client.getApp(created.name);
    if (found?.id !== created.id) continue;
    const builds = new Set((await client.listEndpoints()).flatMap((e) => (e.buildId && !e.environmentId ? [e.buildId] : [])));
    const apps = await Promise.all([...builds].map(async (id) => (await client.getBuild(id))?.appId));
    if (found.environments.length > 0 || apps.includes(created.id)) {
      logger.info(`kept app ${created.name}: created by this svc run, but other endpoints or environments use it now`);
      continue;
    }
    await client.deleteApp(created.id);
    logger.info(`deleted app ${created.name} (created by this svc run)`);
  }
}
