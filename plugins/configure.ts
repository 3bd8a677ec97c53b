/**
 * svc:configure — the deploy's switch: records endpoint name → URL on the uploaded build (read by
 * cross-endpoint calls through getBuild), then makes it the environment's active build in one call
 * (deployBuildToEnvironment: the environment's endpoints run it, with the settings svc:provision
 * saved for it, from that moment; the embedded platform commits it in one transaction and retires
 * the endpoints the build does not have). Endpoints of the environment that the manifest no longer
 * has and that a platform left after the switch are deleted then, and said so; the URLs and the
 * build's manifest go into the environment's deploy state, `.svc/deployments/<env>.json`, apart
 * from the build's own manifest (a rebuild keeps them: core/deploy-state.ts). docs/deploy.md, "One switch".
 */
import { writeDeployState } from "../core/deploy-state.ts";
import type { SvcPlugin } from "../core/types.ts";
import { mapLimit } from "../core/map-limit.ts";
import { deployTarget, platformClient } from "./_platform.ts";
import { PROVISION_CONCURRENCY, staleEndpoints } from "./_provisioning.ts";

export const PLUGIN_NAME = "svc:configure";

export function configure(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.configure.tapPromise(PLUGIN_NAME, async (deployed, ctx) => {
        const client = await platformClient(ctx);
        const { app, environment, buildId } = deployTarget(ctx, "configure");
        const urls = Object.fromEntries(deployed.map((endpoint) => [endpoint.name, endpoint.url]));
        const prefix = ctx.options.endpointPrefix ?? "";
        const before = (await client.getEnvironment(app.id, environment.name))?.endpoints ?? [];
        const stale = staleEndpoints(before, Object.keys(ctx.manifest?.endpoints ?? {}), prefix);
        await client.setBuildEndpointUrls(buildId, urls);
        ctx.logger.info(`  switching ${app.name}/${environment.name} to build ${buildId}`);
        const switched = await client.deployBuildToEnvironment(environment.id, buildId);
        const left = new Set(switched.endpoints.map((endpoint) => endpoint.id));
        await mapLimit(stale, PROVISION_CONCURRENCY, async (endpoint) => {
          if (left.has(endpoint.id)) await client.deleteEndpoint(endpoint.id);
          ctx.logger.info(`  deleted endpoint ${endpoint.name} ${endpoint.id}: no longer in the manifest`);
        });
        if (ctx.manifest) {
          ctx.manifest = { ...ctx.manifest, urls };
          const state = {
            app: app.name,
            environment: environment.name,
            platform: client.url,
            buildId,
            deployedAt: new Date().toISOString(),
            urls,
            manifest: ctx.manifest,
          };
          await writeDeployState(ctx.outDir, state);
        }
        ctx.logger.info(`  build ${buildId} is active in ${app.name}/${environment.name}`);
      });
    },
  };
}
