/**
 * Where svc's own files are at run time, from sources (a checkout) or from the published build
 * (dist/ bundles several modules into one chunk, so a path relative to a module file would break).
 * Assets the code loads — the Python runtime, templates, discover.py, the GraphQL schema, the bin —
 * are found from the package root instead. See docs/architecture.md ("published build").
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** svc's npm name (the command stays `svc`): apps and plugins import it, svc.config.ts's bundle resolves it. */
export const PACKAGE_NAME = "@svc-dev/svc";

function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, "utf8")) as { name?: string }).name === PACKAGE_NAME) return dir;
    if (dirname(dir) === dir) throw new Error(`svc's package.json was not found above ${from}`);
  }
}

/** The folder holding svc's package.json. */
export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

/** True when svc runs from its TypeScript sources (a checkout), false from the published dist/. */
export const FROM_SOURCES = import.meta.url.endsWith(".ts");

/** Absolute path of a file shipped with svc, given relative to the package root. */
export const packagePath = (...parts: string[]): string => join(PACKAGE_ROOT, ...parts);

/** Where svc's own files are (its package root, not the project's): ctx.svc for plugins. */
export interface SvcPaths {
  /** svc's version (package.json). */
  version: string;
  /** The Python runtime package a packer copies into the artifact as `svc/` (svc:tar-pack does). */
  runtimeDir: string;
  /** The discovery helper svc:discover-python runs (reads Python with the interpreter's `ast`). */
  discoverScript: string;
}

export const SVC_PATHS: SvcPaths = {
  version: (JSON.parse(readFileSync(packagePath("package.json"), "utf8")) as { version: string }).version,
  runtimeDir: packagePath("runtime", "python", "svc"),
  discoverScript: packagePath("plugins", "discover-python", "discover.py"),
};
