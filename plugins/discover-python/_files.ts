/**
 * Which files make up the app: a walk of the project root honouring `.gitignore` and `.svcignore`
 * (both at the root, gitignore syntax, via the `ignore` package), config `ignore`, and the built-in
 * ignores below.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import ignore, { type Ignore } from "ignore";
import { CONFIG_FILES } from "../../core/config.ts";
import { readSmallText } from "../_fs.ts";

/** Never part of an app: tooling output, caches, virtualenvs, secrets, tests, build output. */
export const BUILTIN_IGNORES = [
  ".git/",
  ".svc/",
  ".platform/",
  "node_modules/",
  "__pycache__/",
  "*.pyc",
  ".venv/",
  "venv/",
  "env/",
  ".env",
  "tests/",
  "test/",
  "test_*.py",
  "*_test.py",
  "dist/",
  "build/",
];

export const IGNORE_FILES = [".gitignore", ".svcignore"];

/**
 * Not ignored, yet not app sources either, so never packed (the rule for `ctx.sourceFiles`):
 * - every file or folder whose name starts with "." at any depth (.env*, .gitignore, .svcignore,
 *   .python-version, .vscode/, .pytest_cache/, …): tool settings and secrets, not app code;
 * - at the root only: the svc config (svc.config.ts/.mts/.mjs/.js), the Node project files
 *   (package.json, lock files, tsconfig.json), `requirements.txt` (svc:resolve-deps reads it and
 *   writes the resolved one into the artifact), a stale `svc_manifest.json`, and docs named
 *   README*, CHANGELOG*.
 * Data files, templates, model configs, anything else the app reads stays in.
 */
const ROOT_NON_SOURCES = new Set([
  ...CONFIG_FILES,
  "package.json",
  "package-lock.json",
  "npm-shrinkwrap.json",
  "pnpm-lock.yaml",
  "yarn.lock",
  "bun.lockb",
  "bun.lock",
  "tsconfig.json",
  "requirements.txt",
  "svc_manifest.json",
]);

export function isSourceFile(path: string): boolean {
  const segments = path.split("/");
  if (segments.some((segment) => segment.startsWith("."))) return false;
  if (segments.length === 1) {
    const name = segments[0]!;
    if (ROOT_NON_SOURCES.has(name) || /^(readme|changelog)(\.|$)/i.test(name)) return false;
  }
  return true;
}

/** What decides which files are ignored, besides BUILTIN_IGNORES: the ignore files' texts (IGNORE_FILES order) and config `ignore`. */
export interface IgnoreSources {
  files: string[];
  extra: readonly string[];
}

export async function readIgnoreSources(root: string, extra: readonly string[] = []): Promise<IgnoreSources> {
  return { files: IGNORE_FILES.map((name) => readSmallText(join(root, name)) ?? ""), extra };
}

export function ignoreFrom({ files, extra }: IgnoreSources): Ignore {
  const ig = ignore().add(BUILTIN_IGNORES);
  for (const text of files) ig.add(text);
  return ig.add([...extra]);
}

export async function createIgnore(root: string, extra: readonly string[] = []): Promise<Ignore> {
  return ignoreFrom(await readIgnoreSources(root, extra));
}

/**
 * One folder of the walk (`prefix`: its path relative to the root with a trailing "/", "" for the
 * root): the names of its source files and of the folders to walk into. A folder holding a
 * `pyvenv.cfg` (a virtualenv under any name) has neither.
 */
export async function listFolder(dir: string, prefix: string, ig: Ignore): Promise<{ files: string[]; folders: string[] }> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files: string[] = [];
  const folders: string[] = [];
  if (prefix && entries.some((entry) => entry.name === "pyvenv.cfg" && entry.isFile())) return { files, folders };
  for (const entry of entries) {
    if (entry.name.startsWith(".")) continue; // never sources (see isSourceFile); skips .git/ early
    const rel = prefix + entry.name;
    if (entry.isDirectory()) {
      if (!ig.ignores(`${rel}/`)) folders.push(entry.name);
    } else if (entry.isFile() && !ig.ignores(rel) && isSourceFile(rel)) {
      files.push(entry.name);
    }
  }
  return { files, folders };
}

/**
 * Every non-ignored app file (POSIX paths relative to root, sorted by code unit), already filtered
 * by isSourceFile. Symbolic links are skipped (the artifact holds no links), and so is any folder
 * holding a `pyvenv.cfg` (a virtualenv under any name).
 */
export async function listSourceFiles(root: string, extraIgnores: readonly string[] = []): Promise<string[]> {
  const ig = await createIgnore(root, extraIgnores);
  const files: string[] = [];
  async function walk(dir: string, prefix: string): Promise<void> {
    const found = await listFolder(dir, prefix, ig);
    for (const name of found.files) files.push(prefix + name);
    await Promise.all(found.folders.map((name) => walk(join(dir, name), `${prefix}${name}/`)));
  }
  await walk(root, "");
  return files.sort(compareCodeUnits);
}

export const compareCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
