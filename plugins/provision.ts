/**
 * svc:provision — one platform endpoint per manifest endpoint, saved at most 3 at a time, matched
 * by name within the environment: an existing one is updated in place (same id, same URL), a new
 * one created. The settings are saved for the uploaded build: the platform keeps them aside until
 * svc:configure switches the environment to that build, so nothing runs differently before that
 * one step (docs/deploy.md, "One switch"). Endpoints the manifest no longer has go with the switch
 * (svc:configure). Names carry `ctx.options.endpointPrefix` (the dev server's `live-`); the clean-up
 * only touches endpoints of the same kind: with a prefix, names that start with it; without one,
 * names that do not start with `live-` (a dev session's endpoints are not the deploy's business).
 */
import type { EndpointInput, PlatformClient, PlatformEndpoint } from "../core/client/index.ts";
import type { DeployedEndpoint, ManifestEndpoint, SvcPlugin } from "../core/types.ts";
import { errors } from "../core/errors.ts";
import { mapLimit } from "../core/map-limit.ts";
import { deployTarget, platformClient } from "./_platform.ts";

export const PLUGIN_NAME = "svc:provision";
/** Concurrent saveEndpoint / deleteEndpoint calls (spec 8: concurrent resource deployments). */
export const PROVISION_CONCURRENCY = 3;
/** Name prefix of the dev server's endpoints (`svc run`); a deploy's clean-up leaves them alone. */
export const LIVE_PREFIX = "live-";

/** The saveEndpoint input for one manifest endpoint. */
export function endpointInput(
  endpoint: ManifestEndpoint,
  target: { environmentId?: string; buildId?: string; prefix?: string; id?: string; volumeIds?: Record<string, string> },
): EndpointInput {
  const env = Object.entries(endpoint.env).map(([key, value]) => ({ key, value }));
  return {
    ...(target.id ? { id: target.id } : {}),
    name: `${target.prefix ?? ""}${endpoint.name}`,
    type: endpoint.type,
    template: { imageName: endpoint.image },
    ...(endpoint.hardware.gpuIds ? { gpuIds: endpoint.hardware.gpuIds.join(","), gpuCount: endpoint.hardware.gpuCount ?? 1 } : {}),
    ...(endpoint.hardware.instanceIds ? { instanceIds: endpoint.hardware.instanceIds } : {}),
    workersMin: endpoint.scaling.workersMin,
    workersMax: endpoint.scaling.workersMax,
    idleTimeout: endpoint.scaling.idleTimeout,
    scalerType: endpoint.scaling.scalerType,
    scalerValue: endpoint.scaling.scalerValue,
    executionTimeoutMs: endpoint.executionTimeoutMs,
    env,
    ...(target.environmentId ? { environmentId: target.environmentId } : {}),
    ...(target.buildId ? { buildId: target.buildId } : {}),
    ...networkVolume(endpoint, target.volumeIds),
    // A deploy's schedule runs; a dev session's `live-` copy does not (its runs would double the deploy's).
    ...(endpoint.type === "QB" ? { schedule: endpoint.schedule && !target.prefix ? { ...endpoint.schedule } : null } : {}),
  };
}

/** The declared volume's id (svc:volume-refs resolved it), or "" to detach one an earlier deploy attached. */
function networkVolume(endpoint: ManifestEndpoint, ids: Record<string, string> | undefined): { networkVolumeId?: string } {
  if (!endpoint.volume) return { networkVolumeId: "" };
  const id = ids?.[endpoint.volume];
  return id ? { networkVolumeId: id } : {};
}

/** Whether a clean-up with this prefix may delete an endpoint of this name. */
export function inPrefixScope(name: string, prefix: string): boolean {
  return prefix ? name.startsWith(prefix) : !name.startsWith(LIVE_PREFIX);
}

/** Endpoints of the environment, of this prefix's kind, that are not among `names`: the switch retires them. */
export function staleEndpoints(current: readonly PlatformEndpoint[], names: Iterable<string>, prefix = ""): PlatformEndpoint[] {
  const wanted = new Set([...names].map((name) => `${prefix}${name}`));
  return current.filter((endpoint) => !wanted.has(endpoint.name) && inPrefixScope(endpoint.name, prefix));
}

export interface ProvisionResult {
  deployed: DeployedEndpoint[];
  created: string[];
  updated: string[];
}

/** The stage's work, usable on its own. */
export async function provisionEndpoints(
  client: PlatformClient,
  endpoints: readonly ManifestEndpoint[],
  target: { appId: string; environmentName: string; environmentId: string; buildId: string; prefix?: string; volumeIds?: Record<string, string> },
  log: (line: string) => void = () => {},
): Promise<ProvisionResult> {
  const prefix = target.prefix ?? "";
  const volumeIds = await resolveVolumeIds(client, endpoints, target.volumeIds ?? {});
  const current = (await client.getEnvironment(target.appId, target.environmentName))?.endpoints ?? [];
  const byName = new Map<string, PlatformEndpoint>(current.map((endpoint) => [endpoint.name, endpoint]));
  const created: string[] = [];
  const updated: string[] = [];

  const deployed = await mapLimit(endpoints, PROVISION_CONCURRENCY, async (endpoint) => {
    const name = `${prefix}${endpoint.name}`;
    const existing = byName.get(name);
    const saved = await client.saveEndpoint(endpointInput(endpoint, { ...target, prefix, id: existing?.id, volumeIds }));
    (existing ? updated : created).push(name);
    log(`  ${existing ? "updated" : "created"} endpoint ${name} (${endpoint.type}) ${saved.id}`);
    return { name: endpoint.name, id: saved.id, type: endpoint.type, url: saved.url } satisfies DeployedEndpoint;
  });

  return { deployed, created, updated };
}

/** `known` plus the ids of declared volumes it lacks (svc:volume-refs removed or replaced); VOLUME_NOT_FOUND for a missing one. svc:volume-refs and the dev server's provisioner look names up here too. */
export async function resolveVolumeIds(client: Pick<PlatformClient, "listVolumes">, endpoints: readonly ManifestEndpoint[], known: Record<string, string>): Promise<Record<string, string>> {
  const missing = endpoints.filter((e) => e.volume && !known[e.volume]);
  if (missing.length === 0) return known;
  const byName = new Map((await client.listVolumes()).map((v) => [v.name, v.id]));
  const ids = { ...known };
  for (const e of missing) {
    const id = byName.get(e.volume!);
    if (!id) throw errors.VOLUME_NOT_FOUND(e.volume!, e.name);
    ids[e.volume!] = id;
  }
  return ids;
}

export function provision(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.provision.tapPromise(PLUGIN_NAME, async (_deployed, ctx) => {
        const client = await platformClient(ctx);
        const { app, environment, buildId } = deployTarget(ctx, "provision");
        const endpoints = Object.values(ctx.manifest?.endpoints ?? {});
        const result = await provisionEndpoints(
          client,
          endpoints,
          { appId: app.id, environmentName: environment.name, environmentId: environment.id, buildId, prefix: ctx.options.endpointPrefix, volumeIds: ctx.meta.get("svc:volume-refs") },
          (line) => ctx.logger.info(line),
        );
        ctx.meta.set(PLUGIN_NAME, result);
        return result.deployed;
      });
    },
  };
}
