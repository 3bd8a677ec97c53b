/**
 * svc:check-imports — the spec's import-error condition (section 7), caught at build time: a
 * module-level import that a deployed worker cannot satisfy fails the endpoint at start. For each
 * endpoint it follows the module-level imports (ctx.pythonImports, from the AST: nothing is
 * imported) from the endpoint's module through the app's own modules, and warns at file:line about
 * a package that is in none of: the stdlib of the image's Python, the image's pre-installed set,
 * the installed requirements, the app's modules. `--strict` (config `strict`) makes it an error.
 * Runs after svc:pip-install, so requirements are known by the import names they install.
 * docs/deploy.md, "Imports the image cannot satisfy".
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { errors, type SvcError } from "../core/errors.ts";
import type { BuildContext, EndpointSpec, PythonImport, SvcPlugin } from "../core/types.ts";
import { HOOK_ORDER } from "../core/pipeline.ts";
import { modulePath, sharedParser, stdlibWithCache, type PythonParser } from "./_python/index.ts";
import { IMAGE_PACKAGES, imageKindOf } from "../core/images.ts";
import { describeReason } from "./_exclusions.ts";

export const PLUGIN_NAME = "svc:check-imports";
/** After svc:pip-install (HOOK_ORDER.BUILTIN), which sets ctx.depsDir. */
export const CHECK_STAGE = HOOK_ORDER.LAST;

/** Distributions whose import name is not their project name, for builds that do not install them (--no-deps). */
const IMPORT_NAMES: Record<string, string[]> = {
  pillow: ["PIL"],
  "opencv-python": ["cv2"],
  "opencv-python-headless": ["cv2"],
  "opencv-contrib-python": ["cv2"],
  "scikit-learn": ["sklearn"],
  "scikit-image": ["skimage"],
  pyyaml: ["yaml"],
  beautifulsoup4: ["bs4"],
  "python-dateutil": ["dateutil"],
  "python-dotenv": ["dotenv"],
  protobuf: ["google"],
  pyjwt: ["jwt"],
  attrs: ["attr", "attrs"],
};

/** Python versions from which these stdlib modules are gone (the host's Python may be older than the image's). */
const REMOVED_FROM_STDLIB: Array<[version: number, modules: string[]]> = [
  [3.12, ["asynchat", "asyncore", "distutils", "imp", "smtpd"]],
  [
    3.13,
    [
      "aifc",
      "audioop",
      "cgi",
      "cgitb",
      "chunk",
      "crypt",
      "imghdr",
      "lib2to3",
      "mailcap",
      "msilib",
      "nis",
      "nntplib",
      "ossaudiodev",
      "pipes",
      "sndhdr",
      "spwd",
      "sunau",
      "telnetlib",
      "uu",
      "xdrlib",
    ],
  ],
];

export interface CheckImportsOptions {
  /** The parser whose interpreter lists the stdlib. Default: the shared discovery helper. */
  parser?: PythonParser;
}

export interface UnavailableImport {
  file: string;
  line: number;
  /** Top-level import name (`PIL` of `from PIL import Image`). */
  name: string;
  endpoints: string[];
}

export function checkImports(options: CheckImportsOptions = {}): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.installDependencies.tapPromise({ name: PLUGIN_NAME, stage: CHECK_STAGE }, async (_requirements, ctx) => {
        if (!ctx.pythonImports) return; // discovery did not report imports (a replaced svc:discover-python)
        const stdlib = await stdlibFor(ctx, options.parser ?? sharedParser());
        const installed = await installedImportNames(ctx);
        const found = findUnavailableImports(
          ctx.endpoints,
          ctx.pythonImports,
          (name, endpoint) => stdlib.has(name) || installed.has(name) || IMAGE_PACKAGES[imageKindOf(endpoint)].includes(name),
        );
        for (const item of found) ctx.problem(toError(ctx, item)); // file:line, message and remedy: a warning, or under --strict all of them at once
      });
    },
  };
}

/**
 * Walks each endpoint's import graph from its module through app modules; answers every absolute
 * import of a non-app top-level name that `available` refuses, once per file:line:name.
 */
export function findUnavailableImports(
  endpoints: readonly EndpointSpec[],
  importsByFile: Readonly<Record<string, PythonImport[]>>,
  available: (name: string, endpoint: EndpointSpec) => boolean,
): UnavailableImport[] {
  const files = new Map(Object.keys(importsByFile).map((file) => [modulePath(file), file]));
  const ownTopLevel = new Set([...files.keys()].map((module) => module.split(".")[0]!).concat("svc"));
  const found = new Map<string, UnavailableImport>();
  for (const endpoint of endpoints) {
    const seen = new Set<string>();
    const queue = [...withPackages(endpoint.module)];
    while (queue.length) {
      const module = queue.shift()!;
      const file = files.get(module);
      if (!file || seen.has(file)) continue;
      seen.add(file);
      for (const entry of importsByFile[file] ?? []) {
        const target = absoluteModule(module, file, entry);
        if (target === undefined) continue;
        const top = target.split(".")[0]!;
        if (entry.level > 0 || ownTopLevel.has(top)) {
          queue.push(...withPackages(target), ...entry.names.map((name) => `${target}.${name}`).filter((m) => files.has(m)));
          continue;
        }
        if (available(top, endpoint)) continue;
        const key = `${file}:${entry.line}:${top}`;
        const item = found.get(key) ?? { file, line: entry.line, name: top, endpoints: [] };
        if (!item.endpoints.includes(endpoint.name)) item.endpoints.push(endpoint.name);
        found.set(key, item);
      }
    }
  }
  return [...found.values()];
}

/** Importing `a.b.c` runs `a`, `a.b` and `a.b.c`. */
const withPackages = (module: string): string[] => module.split(".").map((_, index, parts) => parts.slice(0, index + 1).join("."));

/** The dotted module an import names, relative ones resolved against the importing module's package. */
function absoluteModule(module: string, file: string, entry: PythonImport): string | undefined {
  if (entry.level === 0) return entry.module;
  const isPackage = file.endsWith("__init__.py");
  const parts = module.split(".");
  const base = parts.slice(0, parts.length - entry.level + (isPackage ? 1 : 0));
  if (base.length === 0 && !entry.module) return undefined; // beyond the app root: Python refuses it too
  return [...base, ...(entry.module ? [entry.module] : [])].join(".");
}

/**
 * The stdlib of the image's Python, from the helper interpreter's list (kept in the discovery cache,
 * so a rebuild starts no Python for it), less what later versions removed.
 */
async function stdlibFor(ctx: BuildContext, parser: PythonParser): Promise<Set<string>> {
  const { modules } = await stdlibWithCache(ctx, parser);
  const names = new Set(modules);
  for (const [version, removed] of REMOVED_FROM_STDLIB) if (Number(ctx.config.pythonVersion) >= version) for (const name of removed) names.delete(name);
  return names;
}

/**
 * Import names the artifact's requirements provide: when installed, every top-level module of
 * site-packages (each *.dist-info's top_level.txt, and the folders and modules themselves);
 * otherwise the requirement names, mapped where the import name differs.
 */
export async function installedImportNames(ctx: Pick<BuildContext, "depsDir" | "requirements">): Promise<Set<string>> {
  const names = new Set<string>();
  if (!ctx.depsDir) {
    for (const requirement of ctx.requirements) {
      for (const name of IMPORT_NAMES[requirement.name] ?? [requirement.name.replace(/[-.]/g, "_")]) names.add(name);
    }
    return names;
  }
  const entries = await readdir(ctx.depsDir, { withFileTypes: true });
  for (const entry of entries) {
    if (entry.name.endsWith(".dist-info")) {
      const topLevel = await readFile(join(ctx.depsDir, entry.name, "top_level.txt"), "utf8").catch(() => "");
      for (const line of topLevel.split(/\r?\n/)) if (line.trim()) names.add(line.trim().split("/")[0]!);
    } else if (entry.isDirectory() && /^[A-Za-z_]\w*$/.test(entry.name)) {
      names.add(entry.name);
    } else if (entry.isFile() && /^[A-Za-z_]\w*(\..+)?\.(py|so|pyd)$/.test(entry.name)) {
      names.add(entry.name.split(".")[0]!);
    }
  }
  return names;
}

function toError(ctx: BuildContext, item: UnavailableImport): SvcError {
  const kinds = new Set(item.endpoints.map((name) => imageKindOf(ctx.endpoints.find((e) => e.name === name)!)));
  const excluded = ctx.excluded.find((r) => r.name === item.name.toLowerCase() || (IMPORT_NAMES[r.name] ?? []).includes(item.name));
  const image = kinds.size === 1 ? `the ${[...kinds][0]!.toUpperCase()} image` : "their images";
  const requirement = Object.entries(IMPORT_NAMES).find(([, imports]) => imports.includes(item.name))?.[0] ?? item.name;
  // A pre-installed package is dropped only when every endpoint's image holds it (core/images.ts), so an excluded one here is the user's.
  const [why, fix] = excluded
    ? [
        `it is excluded from the artifact (${describeReason(excluded.reason)}) and ${image} does not have it`,
        `remove ${excluded.name} from --exclude / config exclude`,
      ]
    : [`it is not in the stdlib, ${image}, the requirements, or the app's own modules`, `add ${requirement} to requirements.txt`];
  return errors.IMPORT_NOT_IN_IMAGE({ file: item.file, line: item.line }, item.name, fix, item.endpoints, why);
}
