/** Root resolvers of schema.graphql (the management API, reference section 3). */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { errors } from "../../core/errors.ts";
import { parseManifest } from "../../core/manifest.ts";
import type { PlatformContext } from "../context.ts";
import type { AppRow, BuildRow, EndpointRecord, EnvironmentRow, TemplateRecord } from "../store/index.ts";
import { newId, newSecret, sha256Hex } from "../_ids.ts";
import type { KeyScope } from "../worker-keys.ts";
import { ARTIFACT_ROUTE } from "../api/uploads.ts";
import { manifestEndpointFor } from "../workers/_target.ts";
import { deletedEndpoints, workerLogLines } from "./worker-logs.ts";
import {
  endpointInputSchema, templateInputSchema, updateEndpointTemplateSchema, nameSchema, sha256Schema, uploadSizeSchema, urlsSchema, parseInput, type EndpointInput,
} from "./inputs.ts";
import { gpuTypes } from "./gpu-types.ts";
import { volumeResolvers, volumeView } from "./volumes.ts";
import { secretResolvers } from "./secrets.ts";

const UPLOAD_TTL_MS = 3600_000;
/** The one user of this platform, as `myself.id` and every endpoint's `userId`. */
const USER_ID = "local";
/** Hosted endpoint fields with no meaning here: no AI keys, versions, standby workers or CUDA (docs/contracts.md). */
const HOSTED_ENDPOINT_FIELDS = { aiKey: null, userId: USER_ID, version: 0, workersStandby: 0, allowedCudaVersions: null };
/** Hosted template fields with no meaning here: no volumes, ports, public listing or readme. */
const HOSTED_TEMPLATE_FIELDS = { volumeInGb: 0, volumeMountPath: null, ports: null, isPublic: false, readme: null };
const iso = (ms: number) => new Date(ms).toISOString();

export interface Resolvers {
  [field: string]: (args: Record<string, unknown>, context?: { workerScope?: KeyScope }) => unknown;
}

/** Hooks the resolvers need from the server (deleting an endpoint stops its workers). */
export interface ResolverHooks {
  endpointRemoved(endpointId: string): Promise<void>;
  endpointChanged(endpointId: string): void;
}

export function createResolvers(ctx: PlatformContext, hooks: ResolverHooks): Resolvers {
  const { store } = ctx;

  const endpointUrl = (e: EndpointRecord) => `${ctx.baseUrl()}/${e.type === "LB" ? "lb" : "v2"}/${e.id}`;

  const endpointView = (e: EndpointRecord) => ({
    id: e.id,
    name: e.name,
    type: e.type,
    gpuIds: e.gpuIds,
    gpuCount: e.gpuCount,
    instanceIds: e.instanceIds,
    idleTimeout: e.idleTimeout,
    scalerType: e.scalerType,
    scalerValue: e.scalerValue,
    workersMin: e.workersMin,
    workersMax: e.workersMax,
    executionTimeoutMs: e.executionTimeoutMs,
    templateId: e.templateId,
    imageName: e.imageName ?? (e.templateId ? store.templates.get(e.templateId)?.imageName ?? null : null),
    env: e.env,
    environmentId: e.environmentId,
    // An environment's endpoints run its active build (docs/platform.md, "Deploys switch in one step").
    buildId: e.environmentId ? store.apps.environment(e.environmentId)?.activeBuildId ?? null : e.buildId,
    url: endpointUrl(e),
    locations: e.locations,
    networkVolumeId: e.networkVolumeId,
    createdAt: iso(e.createdAt),
    flashBootType: e.flashBootType,
    minCudaVersion: e.minCudaVersion,
    computeType: e.gpuIds ? "GPU" : "CPU",
    networkVolume: () => {
      const volume = e.networkVolumeId ? store.volumes.get(e.networkVolumeId) : undefined;
      return volume ? volumeView(volume) : null;
    },
    template: () => {
      const template = e.templateId ? store.templates.get(e.templateId) : undefined;
      return template ? templateView(template) : null;
    },
    ...HOSTED_ENDPOINT_FIELDS,
  });

  const buildView = (b: BuildRow) => ({ id: b.id, appId: b.appId, sha256: b.sha256, size: b.size, manifest: b.manifest, createdAt: iso(b.createdAt) });

  const environmentView = (env: EnvironmentRow) => ({
    id: env.id,
    name: env.name,
    appId: env.appId,
    activeBuildId: env.activeBuildId,
    endpoints: () => store.endpoints.list().filter((e) => e.environmentId === env.id).map(endpointView),
  });

  const appView = (app: AppRow) => ({
    id: app.id,
    name: app.name,
    createdAt: iso(app.createdAt),
    environments: () => store.apps.environments(app.id).map(environmentView),
    builds: () => store.builds.forApp(app.id).map(buildView),
  });

  const templateView = (t: TemplateRecord) => ({
    id: t.id, name: t.name, imageName: t.imageName, env: t.env, containerDiskInGb: t.containerDiskInGb, dockerArgs: t.dockerArgs, isServerless: t.isServerless,
    ...HOSTED_TEMPLATE_FIELDS,
  });

  const mustApp = (id: string) => store.apps.get(id) ?? throwError(errors.NOT_FOUND("App", id));
  const mustEnvironment = (id: string) => store.apps.environment(id) ?? throwError(errors.NOT_FOUND("Environment", id));
  const mustBuild = (id: string) => store.builds.get(id) ?? throwError(errors.NOT_FOUND("Build", id));

  async function removeEndpoint(id: string): Promise<boolean> {
    const endpoint = store.endpoints.get(id);
    if (!endpoint) return false;
    store.logs.retire(endpoint); // its worker logs stay readable for the retention (workerLogLines)
    store.endpoints.remove(id);
    await hooks.endpointRemoved(id);
    return true;
  }

  /** An endpoint's settings as saveEndpoint answers them: live, or staged for a build not yet active. */
  type Saved = { record: EndpointRecord; stagedFor?: string };

  function saveEndpoint(input: EndpointInput): Saved {
    const existing = input.id ? store.endpoints.get(input.id) : undefined;
    if (input.id && !existing) throw errors.NOT_FOUND("Endpoint", input.id);
    if (input.templateId && !store.templates.get(input.templateId)) throw errors.NOT_FOUND("Template", input.templateId);
    if (input.environmentId) mustEnvironment(input.environmentId);
    const build = input.buildId ? mustBuild(input.buildId) : undefined;
    if (input.networkVolumeId && !store.volumes.get(input.networkVolumeId)) throw errors.VOLUME_NOT_FOUND(input.networkVolumeId, input.name);
    const type = input.type ?? existing?.type ?? "QB";
    const env = input.env ?? existing?.env ?? [];
    const templateEnv = input.template?.env ?? [];
    const mergedEnv = input.template ? [...templateEnv.filter((t) => !env.some((e) => e.key === t.key)), ...env] : env;
    const record: EndpointRecord = {
      id: existing?.id ?? newId("ep"),
      name: input.name,
      type,
      gpuIds: input.gpuIds ?? existing?.gpuIds ?? null,
      gpuCount: input.gpuCount ?? existing?.gpuCount ?? null,
      instanceIds: input.instanceIds ?? existing?.instanceIds ?? null,
      workersMin: input.workersMin ?? existing?.workersMin ?? 0,
      workersMax: input.workersMax ?? existing?.workersMax ?? 3,
      idleTimeout: input.idleTimeout ?? existing?.idleTimeout ?? 5,
      scalerType: input.scalerType ?? (input.type && existing?.type !== input.type ? undefined : existing?.scalerType) ?? (type === "LB" ? "REQUEST_COUNT" : "QUEUE_DELAY"),
      scalerValue: input.scalerValue ?? existing?.scalerValue ?? 4,
      executionTimeoutMs: input.executionTimeoutMs ?? existing?.executionTimeoutMs ?? 600_000,
      templateId: input.template ? null : (input.templateId ?? existing?.templateId ?? null),
      imageName: input.template?.imageName ?? (input.templateId ? null : existing?.imageName ?? null),
      env: mergedEnv,
      environmentId: input.environmentId ?? existing?.environmentId ?? null,
      buildId: null, // set below for an endpoint of no environment
      locations: input.locations ?? existing?.locations ?? null,
      networkVolumeId: input.networkVolumeId ?? existing?.networkVolumeId ?? null, // "" (as the hosted SDK sends) is no volume
      flashBootType: input.flashBootType ?? existing?.flashBootType ?? null,
      minCudaVersion: input.minCudaVersion ?? existing?.minCudaVersion ?? null,
      createdAt: existing?.createdAt ?? Date.now(),
    };
    if (record.workersMin > record.workersMax) throw errors.BAD_REQUEST(`Invalid endpoint input: workersMin (${record.workersMin}) exceeds workersMax (${record.workersMax})`);
    const home = record.environmentId ? store.apps.environment(record.environmentId) : undefined;
    if (home && build && build.appId !== home.appId) throw errors.BAD_REQUEST(`Build ${build.id} belongs to another app than environment ${home.name}.`);
    if (!home) record.buildId = input.buildId ?? existing?.buildId ?? null;
    // Settings for a build the environment does not run yet wait for its switch: until then its
    // endpoints go on running the active build with their current settings.
    else if (input.buildId && input.buildId !== home.activeBuildId) {
      store.endpoints.stage(home.id, input.buildId, record);
      return { record, stagedFor: input.buildId };
    }
    store.endpoints.save(record);
    hooks.endpointChanged(record.id);
    return { record };
  }

  const savedView = ({ record, stagedFor }: Saved) => ({ ...endpointView(record), ...(stagedFor ? { buildId: stagedFor } : {}) });

  // Asked both at the top level and under `myself` (the hosted SDK uses the latter).
  const endpointById = ({ id }: Record<string, unknown>) => {
    const e = store.endpoints.get(String(id));
    return e ? endpointView(e) : null;
  };
  const allApps = () => store.apps.list().map(appView);
  const secrets = secretResolvers(ctx);

  return {
    ...volumeResolvers(ctx, hooks.endpointChanged),
    // ---- queries
    myself: () => ({
      id: USER_ID,
      endpoints: () => store.endpoints.list().map(endpointView),
      endpoint: endpointById,
      networkVolumes: () => store.volumes.list().map(volumeView),
      pubKey: null,
      apps: allApps,
      secrets: secrets.listSecrets,
    }),
    endpoint: endpointById,
    apps: allApps,
    app: ({ name }) => {
      const app = store.apps.byName(String(name));
      return app ? appView(app) : null;
    },
    environment: ({ appId, name }) => {
      const env = store.apps.environmentByName(String(appId), String(name));
      return env ? environmentView(env) : null;
    },
    getBuild: ({ id }, context?: { workerScope?: KeyScope }) => {
      const scope = context?.workerScope;
      if (scope && !ctx.workerKeys.readsBuild(scope, String(id))) throw errors.KEY_SCOPE(ctx.workerKeys.describe(scope), `getBuild(id: ${JSON.stringify(String(id))})`);
      const b = store.builds.get(String(id));
      return b ? buildView(b) : null;
    },
    gpuTypes: ({ input }) => gpuTypes(input as Parameters<typeof gpuTypes>[0]),
    workerLogs: ({ endpointId, limit }) => {
      const id = String(endpointId);
      if (!store.endpoints.get(id) && !store.logs.retired(id)) throw errors.NOT_FOUND("Endpoint", id);
      const n = limit === undefined || limit === null ? 200 : Number(limit);
      if (!Number.isInteger(n) || n < 1 || n > 10_000) throw errors.BAD_REQUEST("limit must be between 1 and 10000");
      store.logs.flush();
      return store.logs.tail(id, n);
    },
    workerLogLines: (args) => workerLogLines(store, args),
    deletedEndpoints: ({ name }) => deletedEndpoints(store, name),

    // ---- mutations
    ...secrets.mutations,
    saveEndpoint: ({ input }) => savedView(saveEndpoint(parseInput(endpointInputSchema, input, "endpoint input"))),
    deleteEndpoint: ({ id }) => removeEndpoint(String(id)),
    updateEndpointTemplate: ({ input }) => {
      const { endpointId, templateId } = parseInput(updateEndpointTemplateSchema, input, "updateEndpointTemplate input");
      const existing = store.endpoints.get(endpointId) ?? throwError(errors.NOT_FOUND("Endpoint", endpointId));
      return savedView(saveEndpoint(parseInput(endpointInputSchema, { id: existing.id, name: existing.name, templateId }, "endpoint input")));
    },
    saveTemplate: ({ input }) => {
      const t = parseInput(templateInputSchema, input, "template input");
      return templateView(
        store.templates.create({
          name: t.name,
          imageName: t.imageName,
          env: t.env ?? [],
          containerDiskInGb: t.containerDiskInGb ?? null,
          dockerArgs: t.dockerArgs ?? null,
          isServerless: t.isServerless ?? true,
        }),
      );
    },
    createApp: ({ name }) => {
      const n = parseInput(nameSchema, name, "app name");
      if (store.apps.byName(n)) throw errors.BAD_REQUEST(`App "${n}" already exists.`);
      return appView(store.apps.create(n));
    },
    deleteApp: async ({ id }) => {
      const app = store.apps.get(String(id));
      if (!app) return false;
      const envIds = new Set(store.apps.environments(app.id).map((e) => e.id));
      const builds = store.builds.forApp(app.id);
      const buildIds = new Set(builds.map((b) => b.id));
      for (const e of store.endpoints.list()) {
        if ((e.environmentId && envIds.has(e.environmentId)) || (e.buildId && buildIds.has(e.buildId))) await removeEndpoint(e.id);
      }
      store.apps.remove(app.id);
      for (const b of builds) await rm(join(ctx.options.dataDir, "builds", b.id), { recursive: true, force: true });
      return true;
    },
    createEnvironment: ({ appId, name }) => {
      const app = mustApp(String(appId));
      const n = parseInput(nameSchema, name, "environment name");
      if (store.apps.environmentByName(app.id, n)) throw errors.BAD_REQUEST(`Environment "${n}" already exists in app "${app.name}".`);
      return environmentView(store.apps.createEnvironment(app.id, n));
    },
    deleteEnvironment: async ({ id }) => {
      const env = store.apps.environment(String(id));
      if (!env) return false;
      for (const e of store.endpoints.list()) if (e.environmentId === env.id) await removeEndpoint(e.id);
      return store.apps.removeEnvironment(env.id);
    },
    prepareArtifactUpload: ({ appId, size, sha256 }) => {
      const app = mustApp(String(appId));
      const bytes = parseInput(uploadSizeSchema, size, "size");
      const expected = sha256 === undefined || sha256 === null ? null : parseInput(sha256Schema, String(sha256).replace(/^sha256:/, ""), "sha256");
      const existing = expected ? store.builds.artifact(expected) : undefined;
      const token = newSecret("upt_");
      const upload = store.builds.createUpload({
        appId: app.id,
        size: existing ? existing.size : bytes,
        expectedSha256: expected,
        sha256: existing ? existing.sha256 : null,
        tokenHash: sha256Hex(token),
        expiresAt: Date.now() + UPLOAD_TTL_MS,
      });
      return {
        uploadUrl: `${ctx.baseUrl()}${ARTIFACT_ROUTE}/${upload.objectKey}?token=${token}`,
        objectKey: upload.objectKey,
        expiresAt: iso(upload.expiresAt),
        alreadyUploaded: Boolean(existing),
      };
    },
    finalizeArtifactUpload: ({ objectKey, manifest }) => {
      const upload = store.builds.upload(String(objectKey));
      if (!upload) throw errors.NOT_FOUND("Upload", String(objectKey));
      if (!upload.sha256) throw errors.BAD_REQUEST(`Upload ${upload.objectKey} has no bytes yet: PUT the artifact to its uploadUrl first.`);
      const artifact = store.builds.artifact(upload.sha256);
      if (!artifact) throw errors.NOT_FOUND("Artifact", upload.sha256);
      mustApp(upload.appId);
      const value = typeof manifest === "string" ? safeJson(manifest) : manifest;
      const parsed = parseManifest(value);
      return buildView(store.builds.create({ appId: upload.appId, sha256: artifact.sha256, size: artifact.size, manifest: parsed as Record<string, unknown> }));
    },
    deployBuildToEnvironment: ({ environmentId, buildId }) => {
      const env = mustEnvironment(String(environmentId));
      const build = mustBuild(String(buildId));
      if (build.appId !== env.appId) throw errors.BAD_REQUEST(`Build ${build.id} belongs to another app than environment ${env.name}.`);
      // The one committed step of a deploy (docs/platform.md, "Deploys switch in one step"): the
      // build, the settings staged for it, and the retirement of the endpoints it does not have.
      const names = (build.manifest.endpoints ?? {}) as Record<string, { name?: string }>;
      const runs = (e: EndpointRecord) => manifestEndpointFor(e.name, names) !== undefined;
      const next = new Map(store.endpoints.list().filter((e) => e.environmentId === env.id).map((e) => [e.id, e]));
      for (const e of store.endpoints.staged(env.id, build.id)) next.set(e.id, e);
      const apply = [...next.values()].filter((e) => runs(e) && e !== store.endpoints.get(e.id));
      const retire = [...next.values()].filter((e) => !runs(e) && store.endpoints.get(e.id));
      for (const e of retire) store.logs.retire(e);
      store.endpoints.switchBuild(env.id, build.id, apply, retire.map((e) => e.id));
      for (const e of retire) void hooks.endpointRemoved(e.id);
      for (const e of store.endpoints.list()) if (e.environmentId === env.id) hooks.endpointChanged(e.id);
      return environmentView(store.apps.environment(env.id)!);
    },
    setBuildEndpointUrls: ({ buildId, urls }) => {
      const build = mustBuild(String(buildId));
      const value = typeof urls === "string" ? safeJson(urls) : urls;
      const parsed = parseInput(urlsSchema, value, "urls");
      const manifest = { ...build.manifest, urls: { ...((build.manifest.urls as Record<string, string>) ?? {}), ...parsed } };
      store.builds.setManifest(build.id, manifest);
      return buildView({ ...build, manifest });
    },
  };
}

function throwError(error: Error): never {
  throw error;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw errors.BAD_REQUEST("Expected a JSON object, got a string that is not JSON.");
  }
}
