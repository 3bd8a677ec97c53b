/**
 * svc:configure — makes the uploaded build the environment's active build, records endpoint name →
 * URL on the build (read by cross-endpoint calls through getBuild) and in `.svc/svc_manifest.json`.
 */
import { join } from "node:path";
import { MANIFEST_FILE, writeManifest } from "../core/manifest.ts";
import type { SvcPlugin } from "../core/types.ts";
import { deployTarget, platformClient } from "./_platform.ts";

export const PLUGIN_NAME = "svc:configure";

export function configure(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.configure.tapPromise(PLUGIN_NAME, async (deployed, ctx) => {
        const client = await platformClient(ctx);
        const { app, environment, buildId } = deployTarget(ctx, "configure");
        const urls = Object.fromEntries(deployed.map((endpoint) => [endpoint.name, endpoint.url]));
        await client.setBuildEndpointUrls(buildId, urls);
        await client.deployBuildToEnvironment(environment.id, buildId);
        if (ctx.manifest) {
          ctx.manifest = { ...ctx.manifest, urls };
          await writeManifest(join(ctx.outDir, MANIFEST_FILE), ctx.manifest);
        }
        ctx.logger.info(`  build ${buildId} is active in ${app.name}/${environment.name}`);
      });
    },
  };
}
