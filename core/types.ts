/**
 * The public types of svc: the one hand-written file a plugin author reads.
 * Runtime schemas (zod) live beside the code that validates; the shapes here are what plugins see.
 */
import type { SvcPaths } from "./package-root.ts";
import type { AsyncSeriesHook, AsyncSeriesWaterfallHook } from "tapable";
import type { PlatformClient } from "./client/index.ts";
import type { BatchSettings, Hardware, HttpMethod, RetryPolicy, Scaling, Schedule } from "./endpoint-schema.ts";
import type { EndpointType, SourceLocation, StaticValue } from "./endpoint-types.ts";
import type { Logger } from "./logger.ts";
import type { Manifest, ManifestEndpoint } from "./manifest.ts";

export type { Manifest, ManifestEndpoint, Logger, PlatformClient, SvcPaths };
export type * from "./endpoint-types.ts";
export type { BatchSettings, Hardware, HttpMethod, Scaling, ScalerType, Schedule } from "./endpoint-schema.ts";

/** `@Endpoint(...)` or `x = Endpoint(...)`: the keyword arguments as written, evaluated statically. */
export interface EndpointDeclaration extends SourceLocation {
  /** Python variable holding the Endpoint object (load-balanced form only). */
  variable?: string;
  args: Record<string, StaticValue>;
}

/** A parameter of a decorated function, from the AST (discovery never runs the code). */
export interface FunctionParam {
  name: string;
  kind: "positional_only" | "positional_or_keyword" | "var_positional" | "keyword_only" | "var_keyword";
  /** The annotation as written (`str`, `list[str] | None`); a string annotation is unquoted. */
  annotation?: string;
  required: boolean;
  /** The default, when it is a static value (literal, constant, GpuGroup member). */
  default?: StaticValue;
  /** The default's source text, when it is not static (`dict()`). */
  defaultSource?: string;
}

/** An import that runs when a Python module is imported (module level; see docs/manifest.md). */
export interface PythonImport {
  /** Dotted module as written (`a.b` of `import a.b` / `from a.b import c`); "" for `from . import x`. */
  module: string;
  /** Names of a `from ... import` (candidate submodules); empty for `import x`. */
  names: string[];
  /** Leading dots of a relative import; 0 for an absolute one. */
  level: number;
  line: number;
}

/** One decorated function found by discovery. */
export interface DiscoveredFunction extends SourceLocation {
  name: string;
  /** Dotted module path: `workers/gpu.py` → `workers.gpu`. */
  module: string;
  isAsync: boolean;
  isGenerator: boolean;
  declaration: EndpointDeclaration;
  /** Present for a route of a load-balanced endpoint (`@api.post("/x")`). */
  route?: { method: HttpMethod; path: string };
  /** Its parameters, in order (the job's input / the route's body are their keyword arguments). */
  params?: FunctionParam[];
  /** The module-level TypedDicts, dataclasses and Enums its parameters' annotations name, by name. */
  types?: Record<string, PythonTypeDef>;
  /** The return annotation as written. */
  returns?: string;
  /** The worker runtime that serves it: absent for svc's own; `runpod` for a stock hosted-SDK worker's handler (plugins/discover-stock-worker/). */
  runtime?: WorkerRuntime;
}

/** `runpod`: the file runs unmodified under the hosted platform's own worker SDK (docs/deploy.md, "Stock workers"). */
export type WorkerRuntime = "runpod";

/** A class a parameter's annotation names, as discovery read it (its JSON schema: core/function-schema.ts). */
export type PythonTypeDef =
  | { kind: "TypedDict" | "dataclass"; fields: Array<{ name: string; annotation: string; required: boolean }> }
  | { kind: "Enum"; values: Array<string | number> };

/** One endpoint after grouping: the unit that gets a handler, an image and a platform endpoint. */
export interface EndpointSpec {
  name: string;
  type: EndpointType;
  file: string;
  module: string;
  line: number;
  functions: DiscoveredFunction[];
  hardware: Hardware;
  /** Set by svc:gpu-image. */
  image?: string;
  scaling: Scaling;
  executionTimeoutMs: number;
  env: Record<string, string>;
  dependencies: string[];
  /** The network volume's name (`volume=`), mounted at /platform-volume in its workers (docs/volumes.md). */
  volume?: string;
  /** `schedule=`: when the platform runs the function, and with what input (docs/platform.md, "Schedules"). */
  schedule?: Schedule;
  /** `batch=`: the function takes a list of inputs (docs/platform.md, "Request batching"). */
  batch?: BatchSettings;
  /** `retries=`: how often a job whose function raised runs again (docs/platform.md, "Retries"). */
  retries?: RetryPolicy;
  /** `network=False`: no egress for its workers (docs/platform.md, "Threat model"). */
  network?: false;
  /** Path of the generated handler inside the artifact, set by svc:python-handlers. */
  handler?: string;
  /** Its functions' worker runtime (DiscoveredFunction.runtime). */
  runtime?: WorkerRuntime;
}

export interface Requirement {
  /** The requirement line as pip reads it (`pillow>=10`). */
  spec: string;
  /** Normalised project name (`pillow`), for exclusion and reporting. */
  name: string;
  /** Where it came from: `requirements.txt:3` or `endpoint gpu-worker`. */
  source: string;
}

export interface ExcludedRequirement extends Requirement {
  reason: "preinstalled" | "excluded-by-user";
}

export interface ArtifactEntry {
  /** POSIX path inside the artifact. */
  path: string;
  size: number;
}

export interface Artifact {
  path: string;
  sha256: string;
  /** Compressed size in bytes. */
  size: number;
  /** Uncompressed size in bytes. */
  unpackedSize: number;
  entries: ArtifactEntry[];
}

export interface DeployedEndpoint {
  name: string;
  id: string;
  type: EndpointType;
  url: string;
}

/** Options of one pipeline run; the CLI flags map onto these. */
export interface BuildOptions {
  /** Stop after this stage (`build` stops after pack). */
  until: "manifest" | "pack" | "configure";
  keepBuild: boolean;
  noDeps: boolean;
  exclude: string[];
  analyze: boolean;
  env?: string;
  /** Name prefix for endpoints created by the dev server (`live-`). */
  endpointPrefix?: string;
  /** Build checks that warn fail instead (`--strict`): svc:check-imports. */
  strict?: boolean;
}

/** Everything a plugin may read or write during one run. */
export interface BuildContext {
  // What the run was given.
  root: string;
  /** `.svc/` under root. */
  outDir: string;
  /** `.svc/.build/`: the generated files (handlers, manifest, requirements.txt) the pack adds to the app's own, the runtime and the dependencies. */
  buildDir: string;
  config: ResolvedConfig;
  options: BuildOptions;
  logger: Logger;

  // What each stage fills for the stages after it, on purpose core fields rather than ctx.meta
  // entries: whichever plugin taps the stage fills them (a replacement for a built-in fills the same
  // ones), and the later stages and the commands read them (docs/architecture.md, "Stages and the plugins
  // that tap them").
  /** discover: the decorated functions. */
  functions: DiscoveredFunction[];
  /** discover: the app's source files (POSIX, relative to root) that go into the artifact. */
  sourceFiles: string[];
  /** discover: the module-level imports of each app Python file, by file; unset when discovery reports none. */
  pythonImports?: Record<string, PythonImport[]>;
  /** group */
  endpoints: EndpointSpec[];
  /** manifest */
  manifest?: Manifest;
  /** resolveDependencies: what is installed, and what was left out and why. */
  requirements: Requirement[];
  excluded: ExcludedRequirement[];
  /** installDependencies: `site-packages/` of the installed dependencies; unset when none. */
  depsDir?: string;
  /** pack */
  artifact?: Artifact;
  /** upload: the platform's id of the uploaded build. */
  buildId?: string;
  /** upload: the same id, and `skipped` when the platform already had the artifact (same sha256). */
  upload?: { buildId: string; skipped: boolean };
  /** provision */
  deployed: DeployedEndpoint[];

  // Where the run deploys: core fields on purpose, as the command may set them before any stage.
  /** The platform (set by the command's `prepare`, else by the first plugin that calls it: plugins/_platform.ts). */
  client?: PlatformClient;
  /** The app and environment the deploy targets (resolved by the upload stage). */
  app?: { id: string; name: string };
  environment?: { id: string; name: string };

  /** Anything else one plugin hands others during one run, keyed by the writing plugin's name (see PluginMeta). */
  meta: PluginMetaMap;
  /**
   * What a build check found (a catalogue error or a plugin's `pluginError` verdict): a warning now,
   * or with `--strict` (config `strict`) an error. Under --strict every problem of the run fails it
   * together, once the checks are done (after installDependencies, or the run's last stage if
   * earlier): one problem as itself, several as STRICT_CHECKS_FAILED listing each.
   */
  problem(error: Error & { code: string }): void;
  /** The problems reported so far (ctx.problem), in order. */
  readonly problems: ReadonlyArray<Error & { code: string }>;
  /** svc's own files a plugin that replaces a built-in stage needs (docs/plugins.md, "Replacing a stage"). */
  readonly svc: SvcPaths;
  /**
   * What the run read besides ctx.sourceFiles, as webpack's file and context dependencies: a stage
   * that reads a project file or lists a folder adds it here, and `svc build` skips its next run
   * while none of them changed (core/build-record.ts).
   */
  readonly dependencies: BuildDependencies;
}

/** Absolute paths of what a run read (ctx.dependencies), and the environment variables its config read. */
export interface BuildDependencies {
  /** Files read: a file that changes, or appears where none was, makes the next build run. */
  files: Set<string>;
  /** Folders listed: an entry added, removed or renamed in one makes the next build run. */
  folders: Set<string>;
  /** Environment variables the config read while it loaded. */
  env: Set<string>;
}

/**
 * The channel between plugins: each key of `ctx.meta` declared here has its value's type, so a
 * reader needs no cast. A plugin package declares its own key by augmenting this interface
 * (docs/plugins.md, "Passing data between plugins"):
 *
 *     declare module "@svc-dev/svc/types" {
 *       interface PluginMeta { "svc-plugin-x": { scanned: number } }
 *     }
 */
export interface PluginMeta {
  /** Set by the pipeline when a stage failed, before the `done` hook runs. */
  error: unknown;
}

/** `ctx.meta`: a Map whose keys declared in PluginMeta take and give their declared types. */
export interface PluginMetaMap extends Map<string, unknown> {
  get<K extends keyof PluginMeta>(key: K): PluginMeta[K] | undefined;
  get(key: string): unknown;
  set<K extends keyof PluginMeta>(key: K, value: PluginMeta[K]): this;
  set<K extends string>(key: K extends keyof PluginMeta ? never : K, value: unknown): this;
}

/** One typed tapable hook per stage, in run order, and `done`; frozen at construction (core/pipeline.ts). */
export interface PipelineHooks {
  /** Find decorated functions. Waterfall: each plugin may add or filter. */
  readonly discover: AsyncSeriesWaterfallHook<[DiscoveredFunction[], BuildContext]>;
  /** Turn functions into endpoint specs; validate uniqueness rules. */
  readonly group: AsyncSeriesWaterfallHook<[EndpointSpec[], BuildContext]>;
  /** Write one handler file per endpoint into the build folder. */
  readonly generateHandlers: AsyncSeriesHook<[EndpointSpec[], BuildContext]>;
  /** Build the manifest. svc:manifest creates it at HOOK_ORDER.FIRST and writes it at HOOK_ORDER.LAST. */
  readonly manifest: AsyncSeriesWaterfallHook<[Manifest, BuildContext]>;
  /** Collect requirements (requirements.txt + decorators), minus exclusions. */
  readonly resolveDependencies: AsyncSeriesWaterfallHook<[Requirement[], BuildContext]>;
  /** Install the resolved requirements into the build folder. */
  readonly installDependencies: AsyncSeriesHook<[Requirement[], BuildContext]>;
  /** Write the artifact. The packer plugin returns it; later taps may wrap it. */
  readonly pack: AsyncSeriesWaterfallHook<[Artifact | undefined, BuildContext]>;
  /** Inspect the packed artifact (size guard, analyze). */
  readonly afterPack: AsyncSeriesHook<[Artifact, BuildContext]>;
  /** Send the artifact to the platform; answers the platform's build id. */
  readonly upload: AsyncSeriesWaterfallHook<[string | undefined, BuildContext]>;
  /** Create or update the platform endpoints. */
  readonly provision: AsyncSeriesWaterfallHook<[DeployedEndpoint[], BuildContext]>;
  /** Activate the build, record URLs in the manifest. */
  readonly configure: AsyncSeriesHook<[DeployedEndpoint[], BuildContext]>;
  /** After the last stage of the run, also when it failed (ctx.meta.get("error") is set). */
  readonly done: AsyncSeriesHook<[BuildContext]>;
}

export type StageName = Exclude<keyof PipelineHooks, "done">;

/** What a plugin's apply() receives: core/pipeline.ts's Pipeline. */
export interface Pipeline {
  readonly hooks: PipelineHooks;
  readonly plugins: readonly SvcPlugin[];
  run(ctx: BuildContext): Promise<BuildContext>;
}

export interface SvcPlugin {
  /** `svc:<stage>` for built-ins, `svc-plugin-<x>` for third-party ones. */
  name: string;
  apply(pipeline: Pipeline): void;
}

/**
 * An entry of `plugins` in svc.config.ts: a plugin, a package name, a package name with the options
 * its default export takes (`["svc-plugin-x", { ... }]`), a falsy value (skipped) or a nested list.
 */
export type PluginOption = SvcPlugin | string | [name: string, options: Record<string, unknown>] | false | null | undefined | PluginOption[];

export interface ImageConfig {
  gpu: string;
  cpu: string;
}

/** What `svc.config.ts` exports (via `defineConfig`). */
export interface SvcConfig {
  /** App name on the platform; defaults to the project folder name. */
  app?: string;
  /** Python version of the workers, `3.11` by default. */
  pythonVersion?: string;
  /** Extra plugins, after the built-ins. */
  plugins?: PluginOption[];
  /** Remove built-in plugins by name (`svc:analyze`), or replace them with a plugin of the same name. */
  disablePlugins?: string[];
  images?: Partial<ImageConfig>;
  /** Packages never packed, on top of the pre-installed ones. */
  exclude?: string[];
  /** Artifact size limit in bytes (1.5 GB; lower it for tests). */
  maxArtifactBytes?: number;
  /** Extra ignore patterns (gitignore syntax). */
  ignore?: string[];
  /** Build checks that warn fail instead, as `svc build --strict` (module-level imports the image lacks). */
  strict?: boolean;
  /** A stock hosted-SDK worker folder (no `@Endpoint`): its file and its endpoint's settings (docs/deploy.md, "Stock workers"). */
  stockWorker?: StockWorkerConfig;
}

/**
 * `stockWorker` in svc.config.ts: the file that calls `runpod.serverless.start(...)` (default: the first of
 * handler.py, src/handler.py, rp_handler.py) and the endpoint's settings, the Endpoint arguments of
 * docs/contracts.md §3 in camelCase (seconds for the timeouts).
 */
export interface StockWorkerConfig {
  file?: string;
  name?: string;
  cpu?: string | string[];
  gpu?: string | string[];
  gpuCount?: number;
  workers?: number | [number, number];
  idleTimeout?: number;
  scalerType?: string;
  scalerValue?: number;
  executionTimeout?: number;
  env?: Record<string, string>;
  network?: boolean;
  volume?: string;
}

export interface ResolvedConfig {
  app: string;
  pythonVersion: string;
  plugins: SvcPlugin[];
  disablePlugins: string[];
  images: ImageConfig;
  exclude: string[];
  maxArtifactBytes: number;
  ignore: string[];
  strict?: boolean;
  stockWorker?: StockWorkerConfig;
  /** The config file that was loaded, if any. */
  configFile?: string;
}

export type ConfigEnv = { command: string; mode: "development" | "production" };
export type UserConfigExport = SvcConfig | ((env: ConfigEnv) => SvcConfig | Promise<SvcConfig>);
