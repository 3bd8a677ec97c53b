/**
 * svc/testing: run svc's real pipeline (the built-in plugins, then yours) on a folder, up to the
 * manifest or the artifact, so a plugin's tests check what it does to a real build.
 * docs/plugins.md ("Testing a plugin") shows it in use.
 */
import { createLogger } from "../core/logger.ts";
import type { BuildContext, BuildOptions, Logger, SvcPlugin } from "../core/types.ts";
import { runBuild } from "../plugins/index.ts";

/** runBuild: runPipeline with svc's built-in plugins (what `svc build` runs), for any stop stage and options; builtinPlugins(): the list. */
export { builtinPlugins, runBuild } from "../plugins/index.ts";

export interface BuildFolderOptions {
  /** Stop after the manifest (discovery, grouping, handlers) or after the artifact is packed. */
  until?: "manifest" | "pack";
  /** Plugins under test, applied after the built-ins and the folder's own svc.config.ts plugins. */
  plugins?: SvcPlugin[];
  /** Other build options (`noDeps: true` skips pip for folders with requirements). */
  options?: Partial<Omit<BuildOptions, "until">>;
  /** Silent by default; pass one to see or collect the build's lines and warnings. */
  logger?: Logger;
}

/**
 * Builds the app in `root` (its `.svc/` receives the output) and answers the build context:
 * `ctx.manifest`, `ctx.endpoints`, and after "pack" `ctx.artifact`. A plugin's error rejects with
 * the PLUGIN_ERROR the CLI would print.
 */
export function buildFolder(root: string, { until = "pack", plugins = [], options = {}, logger = createLogger("silent") }: BuildFolderOptions = {}): Promise<BuildContext> {
  return runBuild({ root, plugins, logger, options: { ...options, until } });
}
