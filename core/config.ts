/**
 * Loads `svc.config.ts` (or .mjs/.js): compiled by core/_config-bundle.ts (esbuild, an inline source
 * map so a stack from a plugin in it points at the user's file, cached while its inputs are
 * unchanged), then validated with zod and resolved (plugin package names, with their options →
 * plugin objects, defaults filled in).
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { compileConfig } from "./_config-bundle.ts";
import { errors, fromPlugin } from "./errors.ts";
import { formatZodIssues } from "./manifest.ts";
import type { BuildDependencies, ConfigEnv, PluginOption, ResolvedConfig, SvcConfig, SvcPlugin, UserConfigExport } from "./types.ts";

export const CONFIG_FILES = ["svc.config.ts", "svc.config.mts", "svc.config.mjs", "svc.config.js"];
export const DEFAULT_MAX_ARTIFACT_BYTES = 1.5e9;
export const DEFAULT_IMAGES = {
  gpu: "svc/worker-gpu:py3.11-torch",
  cpu: "svc/worker-cpu:py3.11-slim",
} as const;

/** Identity helper that gives svc.config.ts its types (as in vite and nitro). */
export function defineConfig(config: UserConfigExport): UserConfigExport {
  return config;
}

const pluginObject = z.custom<SvcPlugin>(
  (value) => typeof value === "object" && value !== null && typeof (value as SvcPlugin).name === "string" && typeof (value as SvcPlugin).apply === "function",
  { message: "expected a plugin { name, apply(pipeline) } or a package name" },
);
/** The options of `["svc-plugin-x", { ... }]`: a plain object, not a plugin. */
const pluginOptions = z.custom<Record<string, unknown>>(
  (value) => typeof value === "object" && value !== null && !Array.isArray(value) && typeof (value as SvcPlugin).apply !== "function",
);
const pluginOption: z.ZodType<PluginOption> = z.lazy(() =>
  z.union([pluginObject, z.string().min(1), z.tuple([z.string().min(1), pluginOptions]), z.literal(false), z.null(), z.undefined(), z.array(pluginOption)]),
);

/** `stockWorker`: a hosted-SDK worker folder's endpoint (plugins/discover-stock-worker/); its values are checked as Endpoint arguments. */
const stockWorkerSchema = z.strictObject({
  file: z.string().min(1).optional(),
  name: z.string().optional(),
  cpu: z.union([z.string(), z.array(z.string())]).optional(),
  gpu: z.union([z.string(), z.array(z.string())]).optional(),
  gpuCount: z.number().optional(),
  workers: z.union([z.number(), z.tuple([z.number(), z.number()])]).optional(),
  idleTimeout: z.number().optional(),
  scalerType: z.string().optional(),
  scalerValue: z.number().optional(),
  executionTimeout: z.number().optional(),
  env: z.record(z.string(), z.string()).optional(),
  network: z.boolean().optional(),
  volume: z.string().optional(),
});

const configSchema = z.strictObject({
  app: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]*$/, "lowercase letters, digits and '-'")
    .optional(),
  pythonVersion: z
    .string()
    .regex(/^3\.\d+$/, "like 3.11")
    .optional(),
  plugins: z.array(pluginOption).optional(),
  disablePlugins: z.array(z.string()).optional(),
  images: z.strictObject({ gpu: z.string().min(1).optional(), cpu: z.string().min(1).optional() }).optional(),
  exclude: z.array(z.string().min(1)).optional(),
  maxArtifactBytes: z.number().int().positive().optional(),
  ignore: z.array(z.string()).optional(),
  strict: z.boolean().optional(),
  stockWorker: stockWorkerSchema.optional(),
});

export function findConfigFile(root: string): string | undefined {
  return CONFIG_FILES.map((name) => join(root, name)).find((file) => existsSync(file));
}

/** `dependencies`, when given, gets the files the config was built from and the environment variables it read. */
export async function loadConfig(root: string, env: ConfigEnv, dependencies?: BuildDependencies): Promise<ResolvedConfig> {
  const file = findConfigFile(root);
  const raw = file ? await importConfigFile(root, file, env, dependencies) : {};
  return resolveConfig(root, raw, file);
}

/** What says which versions of npm packages the config imports (they are not bundled): an upgrade is a changed config. */
const PACKAGE_STATE_FILES = ["package.json", "package-lock.json", "node_modules/.package-lock.json", "pnpm-lock.yaml", "yarn.lock", "bun.lock", "bun.lockb"];

/** Each load imports a fresh module instance (the dev server reloads the config on every build). */
let loads = 0;

async function importConfigFile(root: string, file: string, env: ConfigEnv, dependencies?: BuildDependencies): Promise<unknown> {
  try {
    const compiled = await compileConfig(root, file);
    for (const input of [...compiled.inputs, ...PACKAGE_STATE_FILES.map((name) => join(root, name))]) dependencies?.files.add(input);
    return await readingEnv(dependencies?.env, async () => {
      // Source maps on while the config loads, so Node keeps its map: PLUGIN_ERROR's stack then names
      // svc.config.ts:line. Off again after, so the modules loaded later are not mapped for nothing.
      const mapped = process.sourceMapsEnabled;
      process.setSourceMapsEnabled(true);
      const module = await import(`${pathToFileURL(compiled.path).href}?load=${++loads}`).finally(() => process.setSourceMapsEnabled(mapped));
      const exported = (module.default ?? module.config) as UserConfigExport | undefined;
      if (exported === undefined) throw new Error("the file has no default export");
      return typeof exported === "function" ? await exported(env) : exported;
    });
  } catch (error) {
    throw errors.CONFIG_LOAD_FAILED(file, error);
  }
}

/**
 * Runs `work` with every environment variable it reads (by name, or all of them, "*", when it lists
 * them) added to `names`: a config that reads `process.env.X` is another config when X changes.
 */
async function readingEnv<T>(names: Set<string> | undefined, work: () => Promise<T>): Promise<T> {
  if (!names) return work();
  const real = process.env;
  process.env = new Proxy(real, {
    get: (target, name) => (typeof name === "string" && names.add(name), Reflect.get(target, name)),
    has: (target, name) => (typeof name === "string" && names.add(name), Reflect.has(target, name)),
    ownKeys: (target) => (names.add("*"), Reflect.ownKeys(target)),
  });
  try {
    return await work();
  } finally {
    process.env = real;
  }
}

export async function resolveConfig(root: string, raw: unknown, file?: string): Promise<ResolvedConfig> {
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw errors.CONFIG_INVALID(formatZodIssues(parsed.error), file);
  const config: SvcConfig = parsed.data;
  return {
    app: config.app ?? toAppName(basename(root)),
    pythonVersion: config.pythonVersion ?? "3.11",
    plugins: await resolvePlugins(root, config.plugins ?? []),
    disablePlugins: config.disablePlugins ?? [],
    images: { ...DEFAULT_IMAGES, ...config.images },
    exclude: config.exclude ?? [],
    maxArtifactBytes: config.maxArtifactBytes ?? DEFAULT_MAX_ARTIFACT_BYTES,
    ignore: config.ignore ?? [],
    strict: config.strict ?? false,
    ...(config.stockWorker ? { stockWorker: config.stockWorker } : {}),
    configFile: file,
  };
}

/** An app name the platform and the config schema accept (lowercase letters, digits and '-'), from a folder name. */
export function toAppName(raw: string): string {
  return (
    raw
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, "-")
      .replace(/^-+|-+$/g, "") || "app"
  );
}

/** `["svc-plugin-x", { ... }]`: a package name with options (a nested list never ends in a plain object). */
const isNamedWithOptions = (option: readonly unknown[]): option is [string, Record<string, unknown>] =>
  option.length === 2 && typeof option[0] === "string" && pluginOptions.safeParse(option[1]).success;

/** Flattens plugin options; package names are imported from the app's node_modules. */
async function resolvePlugins(root: string, options: PluginOption[]): Promise<SvcPlugin[]> {
  const plugins: SvcPlugin[] = [];
  for (const option of options) {
    if (!option) continue;
    if (Array.isArray(option) && isNamedWithOptions(option)) plugins.push(await importPluginPackage(root, option[0], option[1]));
    else if (Array.isArray(option)) plugins.push(...(await resolvePlugins(root, option as PluginOption[])));
    else if (typeof option === "string") plugins.push(await importPluginPackage(root, option));
    else plugins.push(option);
  }
  return plugins;
}

async function importPluginPackage(root: string, name: string, options?: Record<string, unknown>): Promise<SvcPlugin> {
  let entry: string;
  try {
    entry = createRequire(join(root, "package.json")).resolve(name);
  } catch {
    throw errors.PLUGIN_NOT_FOUND(name, root);
  }
  const module = await import(pathToFileURL(entry).href);
  const exported = module.default ?? module;
  if (options && typeof exported !== "function")
    throw errors.PLUGIN_INVALID(name, "it was given options but its default export is a plugin, not a function taking options");
  let plugin: SvcPlugin;
  try {
    plugin = typeof exported === "function" ? await exported(options) : exported;
  } catch (error) {
    throw fromPlugin(error, name, "options");
  }
  if (!plugin || typeof plugin.apply !== "function" || typeof plugin.name !== "string") {
    throw errors.PLUGIN_INVALID(name, "its default export is neither a plugin nor a function returning one");
  }
  return plugin as SvcPlugin;
}
