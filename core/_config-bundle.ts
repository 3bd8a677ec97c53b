/**
 * svc.config.ts → an importable ES module: bundled by esbuild (TypeScript needs no loader) with an
 * inline source map, so a stack from a plugin in it names svc.config.ts:line. The result is cached
 * in `.svc/cache/config/` by the content of every file the bundle read, so a build whose config
 * did not change neither loads nor starts esbuild (docs/architecture.md, "Startup").
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Plugin } from "esbuild";
import { FROM_SOURCES, PACKAGE_NAME, packagePath } from "./package-root.ts";

const CACHE_DIR = join(".svc", "cache", "config");
const INPUTS_FILE = "inputs.json";
/** Bump when the bundle options change: older cached bundles are then rebuilt. */
const FORMAT_VERSION = 1;

/**
 * Where `import ... from "@svc-dev/svc"` (and `/types`) leads when the app has no svc in its
 * node_modules (svc init, global install): the running svc's own entries, from sources or beside
 * this chunk in the build it is part of (dist/, or the test suite's build).
 */
const SELF_ENTRIES: Record<string, string> = FROM_SOURCES
  ? { [PACKAGE_NAME]: packagePath("core", "index.ts"), [`${PACKAGE_NAME}/types`]: packagePath("core", "types.ts") }
  : { [PACKAGE_NAME]: fileURLToPath(new URL("index.mjs", import.meta.url)), [`${PACKAGE_NAME}/types`]: fileURLToPath(new URL("types.mjs", import.meta.url)) };
/** The specifiers SELF_ENTRIES answers. */
const SELF_SPECIFIER = new RegExp(`^${PACKAGE_NAME.replace(/\//g, "\\/")}(\\/types)?$`);

/** The app's own svc, if it has one installed (then `svc` stays a bare import), else undefined. */
function appSvc(root: string): string | undefined {
  try {
    return createRequire(join(root, "package.json")).resolve(PACKAGE_NAME);
  } catch {
    return undefined;
  }
}

/**
 * esbuild plugin: `@svc-dev/svc` and `@svc-dev/svc/types` stay external, resolved from the app when it has svc
 * installed and otherwise to this very package's files, so a generated project builds without
 * node_modules and the config shares the running svc's module instances.
 */
function selfReference(installed: boolean): Plugin {
  return {
    name: "svc-self-reference",
    setup(on) {
      on.onResolve({ filter: SELF_SPECIFIER }, ({ path }) => ({ path: installed ? path : pathToFileURL(SELF_ENTRIES[path]!).href, external: true }));
    },
  };
}

/** One digest of the bundle's inputs (project-relative paths, read now) and of what `svc` resolves to. */
function cacheKey(root: string, inputs: readonly string[], svc: string | undefined): string {
  const hash = createHash("sha256").update(JSON.stringify([FORMAT_VERSION, svc ?? SELF_ENTRIES]));
  for (const input of inputs) hash.update(`\0${input}\0`).update(readFileSync(join(root, input)));
  return hash.digest("hex").slice(0, 24);
}

/** The compiled config module of `file` (absolute, under root), compiled if its inputs changed. */
export interface CompiledConfig {
  path: string;
  /** What the module was built from: the files esbuild read and the app's own svc, if it has one (absolute). */
  inputs: string[];
}

export async function compileConfig(root: string, file: string): Promise<CompiledConfig> {
  const dir = join(root, CACHE_DIR);
  const svc = appSvc(root);
  const recorded = JSON.parse(await readFile(join(dir, INPUTS_FILE), "utf8").catch(() => "null")) as { inputs: string[]; key: string } | null;
  if (recorded) {
    const key = (() => {
      try {
        return cacheKey(root, recorded.inputs, svc);
      } catch {
        return undefined; // an input is gone: rebuild
      }
    })();
    if (key === recorded.key) return compiled(root, join(dir, `${key}.mjs`), recorded.inputs, svc);
  }

  const { build } = await import("esbuild");
  const result = await build({
    absWorkingDir: root,
    entryPoints: [file],
    outfile: join(dir, "config.mjs"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    plugins: [selfReference(svc !== undefined)],
    sourcemap: "inline",
    sourcesContent: false,
    metafile: true,
    write: false,
    logLevel: "silent",
  });
  const inputs = Object.keys(result.metafile.inputs).sort();
  const key = cacheKey(root, inputs, svc);
  const out = join(dir, `${key}.mjs`);
  await mkdir(dir, { recursive: true });
  for (const old of await readdir(dir)) if (old.endsWith(".mjs")) await rm(join(dir, old), { force: true });
  // write-then-rename: a concurrent build never imports half a file
  const staging = `${out}.${process.pid}.tmp`;
  await writeFile(staging, result.outputFiles[0]!.text);
  await rename(staging, out);
  await writeFile(join(dir, INPUTS_FILE), JSON.stringify({ inputs, key }));
  return compiled(root, out, inputs, svc);
}

const compiled = (root: string, path: string, inputs: readonly string[], svc: string | undefined): CompiledConfig => ({
  path,
  inputs: [...inputs.map((input) => resolve(root, input)), ...(svc ? [svc] : [])],
});
