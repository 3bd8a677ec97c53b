/**
 * What the deploy plugins (svc:provision, svc:configure, svc:volume-refs) and the dev server share
 * about endpoints on the platform: the saveEndpoint input svc sends for a manifest endpoint, the
 * dev server's `live-` prefix, which endpoints a clean-up may retire, and volume ids by name.
 */
// The constant from its own small module: core/client/index.ts loads the client (undici, graphql), which a build never uses.
import { LIVE_PREFIX } from "../core/client/environments.ts";
import type { EndpointInput, PlatformClient, PlatformEndpoint } from "../core/client/index.ts";
import { errors } from "../core/errors.ts";
import type { ManifestEndpoint } from "../core/types.ts";

/** Concurrent saveEndpoint / deleteEndpoint calls (spec 8: concurrent resource deployments). */
export const PROVISION_CONCURRENCY = 3;

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

/** `known` plus the ids of declared volumes it lacks (svc:volume-refs removed or replaced); VOLUME_NOT_FOUND for a missing one. svc:volume-refs and the dev server's provisioner look names up here too. */
export async function resolveVolumeIds(
  client: Pick<PlatformClient, "listVolumes">,
  endpoints: readonly ManifestEndpoint[],
  known: Record<string, string>,
): Promise<Record<string, string>> {
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
