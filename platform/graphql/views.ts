/** The GraphQL shapes of the store's rows (reference section 3): one view per type, fields resolved lazily where nested. */
import type { PlatformContext } from "../context.ts";
import type { AppRow, BuildRow, EndpointRecord, EnvironmentRow, TemplateRecord } from "../store/index.ts";
import { volumeView } from "./volumes.ts";

/** The one user of this platform, as `myself.id` and every endpoint's `userId`. */
export const USER_ID = "local";
/** Hosted endpoint fields with no meaning here: no AI keys, versions, standby workers or CUDA (docs/contracts.md). */
const HOSTED_ENDPOINT_FIELDS = { aiKey: null, userId: USER_ID, version: 0, workersStandby: 0, allowedCudaVersions: null };
/** Hosted template fields with no meaning here: no volumes, ports, public listing or readme. */
const HOSTED_TEMPLATE_FIELDS = { volumeInGb: 0, volumeMountPath: null, ports: null, isPublic: false, readme: null };
export const iso = (ms: number) => new Date(ms).toISOString();

export type Views = ReturnType<typeof createViews>;

export function createViews(ctx: PlatformContext) {
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
    imageName: e.imageName ?? (e.templateId ? (store.templates.get(e.templateId)?.imageName ?? null) : null),
    env: e.env,
    environmentId: e.environmentId,
    // An environment's endpoints run its active build (docs/platform.md, "Deploys switch in one step").
    buildId: e.environmentId ? (store.apps.environment(e.environmentId)?.activeBuildId ?? null) : e.buildId,
    url: endpointUrl(e),
    locations: e.locations,
    networkVolumeId: e.networkVolumeId,
    createdAt: iso(e.createdAt),
    flashBootType: e.flashBootType,
    minCudaVersion: e.minCudaVersion,
    computeType: e.gpuIds ? "GPU" : "CPU",
    schedule: () => ctx.scheduler.view(e),
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
    endpoints: () =>
      store.endpoints
        .list()
        .filter((e) => e.environmentId === env.id)
        .map(endpointView),
  });

  const appView = (app: AppRow) => ({
    id: app.id,
    name: app.name,
    createdAt: iso(app.createdAt),
    environments: () => store.apps.environments(app.id).map(environmentView),
    builds: () => store.builds.forApp(app.id).map(buildView),
  });

  const templateView = (t: TemplateRecord) => ({
    id: t.id,
    name: t.name,
    imageName: t.imageName,
    env: t.env,
    containerDiskInGb: t.containerDiskInGb,
    dockerArgs: t.dockerArgs,
    isServerless: t.isServerless,
    ...HOSTED_TEMPLATE_FIELDS,
  });

  return { endpointView, buildView, environmentView, appView, templateView };
}
