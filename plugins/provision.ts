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
import type { PlatformClient, PlatformEndpoint } from "../core/client/index.ts";
import type { DeployedEndpoint, ManifestEndpoint, SvcPlugin } from "../core/types.ts";
import { mapLimit } from "../core/map-limit.ts";
import { deployTarget, platformClient } from "./_platform.ts";
import { endpointInput, PROVISION_CONCURRENCY, resolveVolumeIds } from "./_provisioning.ts";

export const PLUGIN_NAME = "svc:provision";

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
          {
            appId: app.id,
            environmentName: environment.name,
            environmentId: environment.id,
            buildId,
            prefix: ctx.options.endpointPrefix,
            volumeIds: ctx.meta.get("svc:volume-refs"),
          },
          (line) => ctx.logger.info(line),
        );
        ctx.meta.set(PLUGIN_NAME, result);
        return result.deployed;
      });
    },
  };
}
