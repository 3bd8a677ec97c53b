/**
 * svc:dev-server — the dev server's pipeline taps (`svc run`, docs/dev-server.md). In a dev build
 * they replace svc:upload, svc:provision and svc:configure with the dev session's own steps
 * (dev/provisioning/deploy-steps.ts): the build is uploaded but activated in no environment, and
 * the endpoints are the session's `live-` ones. The dev server itself lives in dev/.
 */
import type { BuildContext, DeployedEndpoint, SvcPlugin } from "../core/types.ts";

export const PLUGIN_NAME = "svc:dev-server";

/** What a rebuild changed on the session's endpoints (the reload report's lists). */
export interface EndpointChanges {
  updated: string[];
  added: string[];
  removed: string[];
}

declare module "../core/types.ts" {
  interface PluginMeta {
    /** Set by the provision step of a rebuild (not of the first build). */
    "svc:dev-server": EndpointChanges;
  }
}

/** The dev session's deploy steps the taps run. */
export interface DevDeploySteps {
  upload(ctx: BuildContext): Promise<string>;
  provision(ctx: BuildContext): Promise<DeployedEndpoint[]>;
  configure(ctx: BuildContext): Promise<void>;
}

export function devServerPlugin(steps: DevDeploySteps): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.upload.tapPromise(PLUGIN_NAME, (_buildId, ctx) => steps.upload(ctx));
      pipeline.hooks.provision.tapPromise(PLUGIN_NAME, (_deployed, ctx) => steps.provision(ctx));
      pipeline.hooks.configure.tapPromise(PLUGIN_NAME, (_deployed, ctx) => steps.configure(ctx));
    },
  };
}
