/**
 * The one place the CLI hands the built-in plugins to core's pipeline (as webpack.js applies its
 * built-in plugins outside the Compiler): core/ imports nothing from plugins/.
 */
import { relative } from "node:path";
import { runPipeline, type RunOptions } from "../core/index.ts";
import type { BuildContext } from "../core/types.ts";
import { ANALYZE_PLUGIN, builtinPlugins } from "../plugins/index.ts";

/** runPipeline with svc's built-in plugins: what `svc build` and `svc deploy` run. */
export function runBuild(options: Omit<RunOptions, "builtins">): Promise<BuildContext> {
  return runPipeline({
    ...options,
    builtins: builtinPlugins(),
    prepare: async (ctx) => {
      warnIdleFlags(ctx);
      await options.prepare?.(ctx);
    },
  });
}

/** A flag whose plugin the config removed does nothing: say so rather than stay silent. */
function warnIdleFlags(ctx: BuildContext): void {
  const replaced = ctx.config.plugins.some((plugin) => plugin.name === ANALYZE_PLUGIN);
  if (ctx.options.analyze && ctx.config.disablePlugins.includes(ANALYZE_PLUGIN) && !replaced) {
    ctx.logger.warn(
      `--analyze has no effect: disablePlugins${ctx.config.configFile ? ` in ${relative(ctx.root, ctx.config.configFile)}` : ""} removes ${ANALYZE_PLUGIN}, the plugin that writes .svc/analyze.html and prints the size summary; remove it from disablePlugins to analyze the artifact.`,
    );
  }
}
