/**
 * The build pipeline: one typed tapable hook per stage, frozen at construction (as in webpack's
 * Compiler). Plugins tap the hooks by name; the runner calls them in order and records timings.
 */
import { AsyncSeriesHook, AsyncSeriesWaterfallHook } from "tapable";
import { errors, formatBytes } from "./errors.ts";
import type { Manifest } from "./manifest.ts";
import type { Artifact, BuildContext, DeployedEndpoint, DiscoveredFunction, EndpointSpec, Requirement, SvcPlugin } from "./types.ts";

function createHooks() {
  return {
    /** Find decorated functions. Waterfall: each plugin may add or filter. */
    discover: new AsyncSeriesWaterfallHook<[DiscoveredFunction[], BuildContext]>(["functions", "ctx"]),
    /** Turn functions into endpoint specs; validate uniqueness rules. */
    group: new AsyncSeriesWaterfallHook<[EndpointSpec[], BuildContext]>(["endpoints", "ctx"]),
    /** Write one handler file per endpoint into the build folder. */
    generateHandlers: new AsyncSeriesHook<[EndpointSpec[], BuildContext]>(["endpoints", "ctx"]),
    /** Build the manifest. svc:manifest creates it at stage -100 and writes it at stage 100. */
    manifest: new AsyncSeriesWaterfallHook<[Manifest, BuildContext]>(["manifest", "ctx"]),
    /** Collect requirements (requirements.txt + decorators), minus exclusions. */
    resolveDependencies: new AsyncSeriesWaterfallHook<[Requirement[], BuildContext]>(["requirements", "ctx"]),
    /** Install the resolved requirements into the build folder. */
    installDependencies: new AsyncSeriesHook<[Requirement[], BuildContext]>(["requirements", "ctx"]),
    /** Write the artifact. The packer plugin returns it; later taps may wrap it. */
    pack: new AsyncSeriesWaterfallHook<[Artifact | undefined, BuildContext]>(["artifact", "ctx"]),
    /** Inspect the packed artifact (size guard, analyze). */
    afterPack: new AsyncSeriesHook<[Artifact, BuildContext]>(["artifact", "ctx"]),
    /** Send the artifact to the platform; answers the platform's build id. */
    upload: new AsyncSeriesWaterfallHook<[string | undefined, BuildContext]>(["buildId", "ctx"]),
    /** Create or update the platform endpoints. */
    provision: new AsyncSeriesWaterfallHook<[DeployedEndpoint[], BuildContext]>(["deployed", "ctx"]),
    /** Activate the build, record URLs in the manifest. */
    configure: new AsyncSeriesHook<[DeployedEndpoint[], BuildContext]>(["deployed", "ctx"]),
    /** After the last stage of the run, also when it failed (ctx.meta has "error"). */
    done: new AsyncSeriesHook<[BuildContext]>(["ctx"]),
  };
}

export type PipelineHooks = Readonly<ReturnType<typeof createHooks>>;
export type StageName = Exclude<keyof PipelineHooks, "done">;

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

export class Pipeline {
  readonly hooks: PipelineHooks;
  readonly plugins: readonly SvcPlugin[];

  constructor(plugins: readonly SvcPlugin[]) {
    this.hooks = Object.freeze(createHooks());
    for (const [name, hook] of Object.entries(this.hooks)) guardPromiseTaps(name, hook);
    this.plugins = plugins;
    for (const plugin of plugins) plugin.apply(this);
  }

  /** Runs the stages up to `ctx.options.until`, filling ctx as it goes. */
  async run(ctx: BuildContext): Promise<BuildContext> {
    const last = STAGES.indexOf(LAST_STAGE[ctx.options.until]);
    try {
      for (const stage of STAGES.slice(0, last + 1)) {
        const started = performance.now();
        await this.runStage(stage, ctx);
        ctx.logger.stage({ stage, ms: performance.now() - started, summary: summarize(stage, ctx) });
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

/**
 * tapable waits forever when a tapPromise callback returns something that is not a promise.
 * One register interceptor per hook turns that into a clear error instead.
 */
function guardPromiseTaps(hookName: string, hook: { intercept(i: object): void }): void {
  hook.intercept({
    register(tap: { type: string; name: string; fn: (...args: unknown[]) => unknown }) {
      if (tap.type !== "promise") return tap;
      const original = tap.fn;
      return {
        ...tap,
        fn(...args: unknown[]) {
          const result = original(...args);
          if (result && typeof (result as Promise<unknown>).then === "function") return result;
          return Promise.reject(errors.PLUGIN_HOOK_NOT_PROMISE(tap.name, hookName));
        },
      };
    },
  });
}
