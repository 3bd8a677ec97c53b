/**
 * The build pipeline: one typed tapable hook per stage, frozen at construction (as in webpack's
 * Compiler). Plugins tap the hooks by name; the runner calls them in order and records timings.
 * An error thrown inside a plugin becomes PLUGIN_ERROR naming the plugin and the hook
 * (docs/plugins.md).
 */
import { AsyncSeriesHook, AsyncSeriesWaterfallHook } from "tapable";
import type { z } from "zod";
import { errors, fromPlugin } from "./errors.ts";
import { formatBytes } from "./format-bytes.ts";
import { parsePluginOptions } from "./plugin-options.ts";
import type { Manifest } from "./manifest.ts";
import type {
  Artifact,
  BuildContext,
  DeployedEndpoint,
  DiscoveredFunction,
  EndpointSpec,
  PipelineHooks,
  Pipeline as PipelineShape,
  Requirement,
  StageName,
  SvcPlugin,
} from "./types.ts";

/** The hooks PipelineHooks (core/types.ts) describes, one per stage. */
function createHooks(): PipelineHooks {
  return {
    discover: new AsyncSeriesWaterfallHook<[DiscoveredFunction[], BuildContext]>(["functions", "ctx"]),
    group: new AsyncSeriesWaterfallHook<[EndpointSpec[], BuildContext]>(["endpoints", "ctx"]),
    generateHandlers: new AsyncSeriesHook<[EndpointSpec[], BuildContext]>(["endpoints", "ctx"]),
    manifest: new AsyncSeriesWaterfallHook<[Manifest, BuildContext]>(["manifest", "ctx"]),
    resolveDependencies: new AsyncSeriesWaterfallHook<[Requirement[], BuildContext]>(["requirements", "ctx"]),
    installDependencies: new AsyncSeriesHook<[Requirement[], BuildContext]>(["requirements", "ctx"]),
    pack: new AsyncSeriesWaterfallHook<[Artifact | undefined, BuildContext]>(["artifact", "ctx"]),
    afterPack: new AsyncSeriesHook<[Artifact, BuildContext]>(["artifact", "ctx"]),
    upload: new AsyncSeriesWaterfallHook<[string | undefined, BuildContext]>(["buildId", "ctx"]),
    provision: new AsyncSeriesWaterfallHook<[DeployedEndpoint[], BuildContext]>(["deployed", "ctx"]),
    configure: new AsyncSeriesHook<[DeployedEndpoint[], BuildContext]>(["deployed", "ctx"]),
    done: new AsyncSeriesHook<[BuildContext]>(["ctx"]),
  };
}

/**
 * Where a tap runs among the taps of one hook: tapable's `stage` option, lower first. Built-ins
 * tap at BUILTIN unless they must wrap the others; tap with BEFORE_BUILTINS or AFTER_BUILTINS to
 * run before or after them (docs/plugins.md has the table of who taps where).
 */
export const HOOK_ORDER = {
  /** svc:manifest creates the manifest here, before anyone edits it. */
  FIRST: -100,
  /** Before the built-ins (svc:analyze reports before svc:size-guard can fail the build). */
  BEFORE_BUILTINS: -10,
  /** The built-ins' own taps and any tap that names no stage. */
  BUILTIN: 0,
  /** After the built-ins (svc:exclude-preinstalled sees every requirement source). */
  AFTER_BUILTINS: 10,
  /** svc:manifest validates and writes the manifest here, after every edit. */
  LAST: 100,
} as const;

export const STAGES: readonly StageName[] = [
  "discover",
  "group",
  "generateHandlers",
  "manifest",
  "resolveDependencies",
  "installDependencies",
  "pack",
  "afterPack",
  "upload",
  "provision",
  "configure",
];

const LAST_STAGE: Record<BuildContext["options"]["until"], StageName> = {
  manifest: "manifest",
  pack: "afterPack",
  configure: "configure",
};

/** The stages a run with this `until` goes through, in order. */
export const stagesOf = (until: BuildContext["options"]["until"]): StageName[] => STAGES.slice(0, STAGES.indexOf(LAST_STAGE[until]) + 1);

/** What each stage must produce for the next ones (afterPack only inspects): a stage with no tap fails the run before it starts. */
export const STAGE_PRODUCES: Record<StageName, string | undefined> = {
  discover: "the decorated functions of the app",
  group: "the endpoints, grouped from the functions",
  generateHandlers: "one handler file per endpoint in .svc/.build/",
  manifest: "the manifest, .svc/svc_manifest.json",
  resolveDependencies: "the requirement set to install",
  installDependencies: "the installed dependencies (the artifact's site-packages/)",
  pack: "the artifact, .svc/artifact.tar.gz",
  afterPack: undefined,
  upload: "the uploaded build on the platform",
  provision: "the platform's endpoints",
  configure: "the environment's active build and the endpoints' URLs",
};

export class Pipeline implements PipelineShape {
  readonly hooks: PipelineHooks;
  readonly plugins: readonly SvcPlugin[];
  /** The plugin whose apply() is running: its taps are attributed to it in PLUGIN_ERROR. */
  #applying: string | undefined;

  constructor(plugins: readonly SvcPlugin[]) {
    this.hooks = Object.freeze(createHooks());
    for (const [name, hook] of Object.entries(this.hooks)) attributeTaps(name, hook, () => this.#applying);
    this.plugins = plugins;
    for (const plugin of plugins) {
      this.#applying = plugin.name;
      try {
        plugin.apply(this);
      } catch (error) {
        throw fromPlugin(error, plugin.name, "apply");
      } finally {
        this.#applying = undefined;
      }
    }
  }

  /** Runs the stages up to `ctx.options.until`, filling ctx as it goes. */
  async run(ctx: BuildContext): Promise<BuildContext> {
    try {
      const stages = stagesOf(ctx.options.until);
      const checksEnd = stages.includes(CHECKS_END) ? CHECKS_END : stages.at(-1);
      for (const stage of stages) {
        const started = performance.now();
        await this.runStage(stage, ctx);
        ctx.logger.stage({ stage, ms: performance.now() - started, summary: summarize(stage, ctx) });
        if (stage === checksEnd) failOnStrictProblems(ctx);
      }
    } catch (error) {
      ctx.meta.set("error", error);
      throw error;
    } finally {
      await this.hooks.done.promise(ctx);
    }
    return ctx;
  }

  private async runStage(stage: StageName, ctx: BuildContext): Promise<void> {
    const h = this.hooks;
    switch (stage) {
      case "discover":
        ctx.functions = await h.discover.promise(ctx.functions, ctx);
        return;
      case "group":
        ctx.endpoints = await h.group.promise(ctx.endpoints, ctx);
        return;
      case "generateHandlers":
        return h.generateHandlers.promise(ctx.endpoints, ctx);
      case "manifest":
        ctx.manifest = await h.manifest.promise(ctx.manifest as Manifest, ctx);
        return;
      case "resolveDependencies":
        ctx.requirements = await h.resolveDependencies.promise(ctx.requirements, ctx);
        return;
      case "installDependencies":
        return h.installDependencies.promise(ctx.requirements, ctx);
      case "pack":
        ctx.artifact = await h.pack.promise(ctx.artifact, ctx);
        return;
      case "afterPack":
        if (ctx.artifact) await h.afterPack.promise(ctx.artifact, ctx);
        return;
      case "upload":
        ctx.buildId = await h.upload.promise(ctx.buildId, ctx);
        return;
      case "provision":
        ctx.deployed = await h.provision.promise(ctx.deployed, ctx);
        return;
      case "configure":
        return h.configure.promise(ctx.deployed, ctx);
    }
  }
}

/** The last stage of the build's checks (imports are checked against what was installed): under --strict, the run's problems fail it here, all together. */
const CHECKS_END: StageName = "installDependencies";

function failOnStrictProblems(ctx: BuildContext): void {
  if (!(ctx.options.strict || ctx.config.strict) || ctx.problems.length === 0) return;
  if (ctx.problems.length === 1) throw ctx.problems[0];
  throw errors.STRICT_CHECKS_FAILED(ctx.problems);
}

function summarize(stage: StageName, ctx: BuildContext): string | undefined {
  switch (stage) {
    case "discover":
      return `${ctx.functions.length} function(s) in ${new Set(ctx.functions.map((f) => f.file)).size} file(s)`;
    case "group":
      return ctx.endpoints.map((e) => `${e.name} (${e.type})`).join(", ");
    case "resolveDependencies":
      return `${ctx.requirements.length} requirement(s), ${ctx.excluded.length} excluded`;
    case "pack":
      return ctx.artifact ? `${formatBytes(ctx.artifact.size)} (${ctx.artifact.entries.length} files)` : undefined;
    case "provision":
      return `${ctx.deployed.length} endpoint(s)`;
    default:
      return undefined;
  }
}

type Tap = { type: "sync" | "async" | "promise"; name: string; fn: (...args: unknown[]) => unknown };

/**
 * One register interceptor per hook wraps every tap so that what it throws (or rejects, or passes
 * to its callback) becomes PLUGIN_ERROR naming the plugin being applied (else the tap's name) and
 * the hook. It also stops tapable's endless wait when a tapPromise callback returns no promise.
 */
function attributeTaps(hookName: string, hook: { intercept(i: object): void }, applying: () => string | undefined): void {
  hook.intercept({
    register(tap: Tap): Tap {
      const plugin = applying() ?? tap.name;
      const original = tap.fn;
      const fail = (error: unknown) => fromPlugin(error, plugin, hookName);
      switch (tap.type) {
        case "sync":
          return {
            ...tap,
            fn(...args) {
              try {
                return original(...args);
              } catch (error) {
                throw fail(error);
              }
            },
          };
        case "async":
          return {
            ...tap,
            fn(...args) {
              const callback = args.pop() as (error?: unknown, result?: unknown) => void;
              try {
                return original(...args, (error?: unknown, result?: unknown) => callback(error ? fail(error) : error, result));
              } catch (error) {
                return callback(fail(error));
              }
            },
          };
        case "promise":
          return {
            ...tap,
            fn(...args) {
              let result: unknown;
              try {
                result = original(...args);
              } catch (error) {
                return Promise.reject(fail(error));
              }
              if (!result || typeof (result as Promise<unknown>).then !== "function") return Promise.reject(errors.PLUGIN_HOOK_NOT_PROMISE(plugin, hookName));
              return (result as Promise<unknown>).then(undefined, (error: unknown) => Promise.reject(fail(error)));
            },
          };
      }
    },
  });
}

/**
 * Types a plugin, or a factory taking options (as defineConfig types the config). With
 * `{ options: schema }` (a zod schema: `z` from "@svc-dev/svc"), the factory's options are checked
 * against it on each call, unknown keys named with the closest known one (./plugin-options.ts).
 */
export function definePlugin<T extends SvcPlugin | ((...args: never[]) => SvcPlugin)>(plugin: T): T;
export function definePlugin<O>(
  factory: (options: O) => SvcPlugin,
  declared: { name: string; options: z.ZodType<O> },
): (options?: z.input<z.ZodType<O>>) => SvcPlugin;
export function definePlugin(plugin: SvcPlugin | ((options: unknown) => SvcPlugin), declared?: { name: string; options: z.ZodType }): unknown {
  if (!declared || typeof plugin !== "function") return plugin;
  const checked = (options?: unknown) => plugin(parsePluginOptions(declared.name, declared.options, options));
  return Object.assign(checked, { optionsSchema: declared.options });
}
