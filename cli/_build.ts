/**
 * The one place the CLI hands the built-in plugins to core's pipeline (as webpack.js applies its
 * built-in plugins outside the Compiler): core/ imports nothing from plugins/.
 */
import { runPipeline, type RunOptions } from "../core/index.ts";
import type { BuildContext } from "../core/types.ts";
import { builtinPlugins } from "../plugins/index.ts";

/** runPipeline with svc's built-in plugins: what `svc build` and `svc deploy` run. */
export function runBuild(options: Omit<RunOptions, "builtins">): Promise<BuildContext> {
  return runPipeline({ ...options, builtins: builtinPlugins() });
}
