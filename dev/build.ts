/**
 * One dev-server build: svc's build (config reloaded each time, so edits to svc.config.ts apply)
 * minus the deploy stages the dev server's plugin replaces, run up to configure with the `live-`
 * prefix. Plugins keep their caches across runs (discovery's per-file parse cache, pip's
 * requirement-hash cache, tar-pack's state), which is what makes a reload incremental.
 */
import type { PlatformClient } from "../core/client/index.ts";
import type { Logger } from "../core/logger.ts";
import type { BuildContext, SvcPlugin } from "../core/types.ts";
import { runBuild } from "../plugins/index.ts";

/** Deploy stages the dev server does its own way (no environment, `live-` endpoints, cache). */
export const REPLACED_PLUGINS = ["svc:upload", "svc:provision", "svc:configure"];

export function createBuildPipeline(options: { root: string; prefix: string; plugin: SvcPlugin; extraPlugins?: SvcPlugin[]; client?: PlatformClient }) {
  return function build(logger: Logger): Promise<BuildContext> {
    return runBuild({
      root: options.root,
      env: { command: "run", mode: "development" },
      options: { until: "configure", endpointPrefix: options.prefix },
      logger,
      plugins: [options.plugin, ...(options.extraPlugins ?? [])],
      disable: REPLACED_PLUGINS,
      // svc:secret-refs checks the env's secret references against the platform, as a deploy does
      prepare: (ctx) => {
        ctx.client = options.client;
      },
    });
  };
}
