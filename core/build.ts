/**
 * Assembles one run: config → plugin list (built-ins, minus disabled, user plugins replacing
 * built-ins of the same name) → Pipeline → context → run. The built-in list is handed in from the
 * top (cli/, svc/testing), as webpack.js applies its plugins outside the Compiler: core/ imports
 * nothing from plugins/ (docs/architecture.md).
 */
import { join } from "node:path";
import { loadConfig } from "./config.ts";
import { createLogger, type Logger } from "./logger.ts";
import { Pipeline } from "./pipeline.ts";
import type { BuildContext, BuildOptions, ConfigEnv, ResolvedConfig, SvcPlugin } from "./types.ts";

export const OUT_DIR = ".svc";
export const BUILD_DIR = ".build";

export const defaultBuildOptions: BuildOptions = {
  until: "pack",
  keepBuild: false,
  noDeps: false,
  exclude: [],
  analyze: false,
};

/** Built-ins first, in stage order; a user plugin with a built-in's name takes its place. */
export function resolvePluginList(config: ResolvedConfig, builtins: readonly SvcPlugin[]): SvcPlugin[] {
  const disabled = new Set(config.disablePlugins);
  const userByName = new Map(config.plugins.map((plugin) => [plugin.name, plugin]));
  const list = builtins.filter((plugin) => !disabled.has(plugin.name)).map((plugin) => userByName.get(plugin.name) ?? plugin);
  const builtinNames = new Set(builtins.map((plugin) => plugin.name));
  return [...list, ...config.plugins.filter((plugin) => !builtinNames.has(plugin.name))];
}

export function createContext(root: string, config: ResolvedConfig, options: BuildOptions, logger: Logger): BuildContext {
  const outDir = join(root, OUT_DIR);
  return {
    root,
    outDir,
    buildDir: join(outDir, BUILD_DIR),
    config,
    options,
    logger,
    functions: [],
    endpoints: [],
    requirements: [],
    excluded: [],
    sourceFiles: [],
    deployed: [],
    meta: new Map(),
  };
}

export interface RunOptions {
  root: string;
  /** The built-in plugins (plugins/index.ts's builtinPlugins()); the config may disable or replace them. */
  builtins: readonly SvcPlugin[];
  options?: Partial<BuildOptions>;
  logger?: Logger;
  env?: ConfigEnv;
  /** Extra plugins for this run only (the dev server and deploy commands add theirs). */
  plugins?: SvcPlugin[];
  /** Called with the context before the pipeline runs (to attach a platform client, say). */
  prepare?: (ctx: BuildContext) => void | Promise<void>;
}

export async function runPipeline({ root, builtins, options, logger = createLogger(), env, plugins = [], prepare }: RunOptions): Promise<BuildContext> {
  const config = await loadConfig(root, env ?? { command: "build", mode: "production" });
  const pipeline = new Pipeline([...resolvePluginList(config, builtins), ...plugins]);
  const ctx = createContext(root, config, { ...defaultBuildOptions, ...options }, logger);
  await prepare?.(ctx);
  return pipeline.run(ctx);
}
