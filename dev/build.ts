/**
 * One dev-server build: the project's plugin list (config reloaded each time, so edits to
 * svc.config.ts apply), minus the deploy stages this plugin replaces, run up to configure with the
 * `live-` prefix. Plugins keep their caches across runs (discovery's per-file parse cache, pip's
 * requirement-hash cache, tar-pack's state), which is what makes a reload incremental.
 */
import { createContext, defaultBuildOptions, resolvePluginList } from "../core/build.ts";
import { loadConfig } from "../core/config.ts";
import type { Logger } from "../core/logger.ts";
import type { PlatformClient } from "../core/client/index.ts";
import { Pipeline } from "../core/pipeline.ts";
import type { BuildContext, SvcPlugin } from "../core/types.ts";
import { builtinPlugins } from "../plugins/index.ts";

/** Deploy stages the dev server does its own way (no environment, `live-` endpoints, cache). */
export const REPLACED_PLUGINS = ["svc:upload", "svc:provision", "svc:configure"];

export function createBuildPipeline(options: { root: string; prefix: string; plugin: SvcPlugin; extraPlugins?: SvcPlugin[]; client?: PlatformClient }) {
  return async function build(logger: Logger): Promise<BuildContext> {
    const config = await loadConfig(options.root, { command: "run", mode: "development" });
    const plugins = resolvePluginList({ ...config, disablePlugins: [...config.disablePlugins, ...REPLACED_PLUGINS] }, builtinPlugins());
    const pipeline = new Pipeline([...plugins, options.plugin, ...(options.extraPlugins ?? [])]);
    const ctx = createContext(options.root, config, { ...defaultBuildOptions, until: "configure", endpointPrefix: options.prefix }, logger);
    ctx.client = options.client; // svc:secret-refs checks the env's secret references against the platform, as a deploy does
    return pipeline.run(ctx);
  };
}
