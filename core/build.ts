/**
 * Assembles one run: config → plugin list (built-ins, minus disabled, user plugins replacing
 * built-ins of the same name) → Pipeline → context → run. The built-in list is handed in from the
 * top (cli/, svc/testing), as webpack.js applies its plugins outside the Compiler: core/ imports
 * nothing from plugins/ (docs/architecture.md).
 */
import { join, relative, resolve } from "node:path";
import { closestName } from "./closest.ts";
import { loadConfig } from "./config.ts";
import { errors } from "./errors.ts";
import { createLogger, type Logger } from "./logger.ts";
import { Pipeline, stagesOf, STAGE_PRODUCES } from "./pipeline.ts";
import type { BuildContext, BuildDependencies, BuildOptions, ConfigEnv, ResolvedConfig, SvcPlugin } from "./types.ts";
import { SVC_PATHS } from "./package-root.ts";
import { startOtel, tracingConfigured } from "./otel.ts";
import { tracePipeline } from "./pipeline-trace.ts";

export const OUT_DIR = ".svc";
export const BUILD_DIR = ".build";

export const defaultBuildOptions: BuildOptions = {
  until: "pack",
  keepBuild: false,
  noDeps: false,
  exclude: [],
  analyze: false,
};

/**
 * Built-ins first, in stage order; a user plugin with a built-in's name takes its place. A name in
 * disablePlugins that is no plugin's is CONFIG_INVALID with the closest name (a typo never passes silently).
 */
export function resolvePluginList(config: ResolvedConfig, builtins: readonly SvcPlugin[]): SvcPlugin[] {
  const disabled = new Set(config.disablePlugins);
  const known = [...builtins, ...config.plugins].map((plugin) => plugin.name);
  for (const name of disabled) {
    if (known.includes(name)) continue;
    const closest = closestName(name, known);
    throw errors.CONFIG_INVALID(
      `disablePlugins names "${name}", which is no plugin of this build${closest ? `; did you mean "${closest}"?` : ` (the built-ins are ${builtins.map((p) => p.name).join(", ")})`}`,
      config.configFile,
    );
  }
  const userByName = new Map(config.plugins.map((plugin) => [plugin.name, plugin]));
  const list = builtins.filter((plugin) => !disabled.has(plugin.name)).map((plugin) => userByName.get(plugin.name) ?? plugin);
  const builtinNames = new Set(builtins.map((plugin) => plugin.name));
  return [...list, ...config.plugins.filter((plugin) => !builtinNames.has(plugin.name) && !disabled.has(plugin.name))];
}

const noDependencies = (): BuildDependencies => ({ files: new Set(), folders: new Set(), env: new Set() });

export function createContext(
  root: string,
  config: ResolvedConfig,
  options: BuildOptions,
  logger: Logger,
  dependencies: BuildDependencies = noDependencies(),
): BuildContext {
  const outDir = join(root, OUT_DIR);
  const problems: Array<Error & { code: string }> = [];
  const strict = Boolean(options.strict || config.strict);
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
    problems,
    problem(error) {
      problems.push(error);
      if (!strict) logger.warn(error.message);
    },
    svc: SVC_PATHS,
    dependencies,
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
  /** Plugins this run leaves out beside the config's disablePlugins (the dev server's own deploy stages replace svc:upload, …). */
  disable?: readonly string[];
  /** Called with the context before the pipeline runs (to attach a platform client, say). */
  prepare?: (ctx: BuildContext) => void | Promise<void>;
}

export async function runPipeline({
  root: given,
  builtins,
  options,
  logger = createLogger(),
  env,
  plugins = [],
  disable = [],
  prepare,
}: RunOptions): Promise<BuildContext> {
  const root = resolve(given); // `buildFolder("app")` as docs/plugins.md writes it: relative to the working folder
  const dependencies = noDependencies();
  const config = await loadConfig(root, env ?? { command: "build", mode: "production" }, dependencies);
  const pipeline = new Pipeline([...resolvePluginList({ ...config, disablePlugins: [...config.disablePlugins, ...disable] }, builtins), ...plugins]);
  const ctx = createContext(root, config, { ...defaultBuildOptions, ...options }, logger, dependencies);
  assertStagesFilled(pipeline, ctx);
  // Each stage and plugin tap as a span when OTLP is configured (./pipeline-trace.ts); nothing loads otherwise.
  const otel = tracingConfigured() ? await startOtel("svc") : undefined;
  const trace = otel && tracePipeline(pipeline.hooks, otel, `svc ${env?.command ?? "build"}`);
  try {
    await prepare?.(ctx);
    await pipeline.run(ctx);
  } catch (error) {
    await trace?.end(error);
    throw error;
  }
  await trace?.end();
  return ctx;
}

/**
 * Before any work: every stage this run reaches that must produce something has a tap. Disabling a
 * built-in that nobody replaces (`disablePlugins: ["svc:tar-pack"]`) is STAGE_UNFILLED naming the
 * stage and what it produces, not a build that "succeeds" with no artifact.
 */
function assertStagesFilled(pipeline: Pipeline, ctx: BuildContext): void {
  for (const stage of stagesOf(ctx.options.until)) {
    const produces = STAGE_PRODUCES[stage];
    if (produces && pipeline.hooks[stage].taps.length === 0)
      throw errors.STAGE_UNFILLED(stage, produces, ctx.config.disablePlugins, ctx.config.configFile && relative(ctx.root, ctx.config.configFile));
  }
}
