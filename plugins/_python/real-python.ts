/**
 * The interpreter behind a `python3` shim (pyenv, asdf): a shim is a script that works out which
 * Python to run on every start, 0.1–0.2 s each time. The discovery helper reports the interpreter it
 * really is (`sys.executable`); svc keeps that in `.svc/cache/python.json`, keyed by everything the
 * shim's choice depends on, and later builds start it directly. `SVC_PYTHON` is always started as
 * given (interpreter.ts). docs/manifest.md, "Python interpreter".
 */
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { readCacheJson, writeFileAtomically } from "../_fs.ts";

export const PYTHON_CACHE_FILE = "cache/python.json";
const DEFAULT_PYTHON = "python3";
/** What version managers read to pick an interpreter (pyenv, asdf), besides their version files. */
const SHIM_ENV = ["PYENV_VERSION", "PYENV_ROOT", "PYENV_DIR", "ASDF_PYTHON_VERSION", "ASDF_DATA_DIR", "VIRTUAL_ENV"];
const VERSION_FILES = [".python-version", ".tool-versions"];

interface PythonCache {
  key: string;
  executable: string;
}

/** `path:mtime:size`, or `path:-` when it does not exist. */
function stamp(path: string): string {
  const info = statSync(path, { bigint: true, throwIfNoEntry: false });
  return info ? `${path}:${info.mtimeNs}:${info.size}` : `${path}:-`;
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const file = join(dir, name);
    if (statSync(file, { throwIfNoEntry: false })?.isFile()) return file;
  }
  return undefined;
}

function isScript(file: string): boolean {
  const head = Buffer.alloc(2);
  const fd = openSync(file, "r");
  try {
    return readSync(fd, head, 0, 2, 0) === 2 && head.toString("latin1") === "#!";
  } finally {
    closeSync(fd);
  }
}

/**
 * What the shim's answer depends on: the shim itself, the version managers' variables, the version
 * files from the working directory (children start there) up to `/`, and the global ones. Undefined
 * when there is nothing to resolve: `SVC_PYTHON` set, or `python3` not a script.
 */
function shimKey(): string | undefined {
  if (process.env.SVC_PYTHON) return undefined;
  const shim = findOnPath(DEFAULT_PYTHON);
  if (!shim || !isScript(shim)) return undefined;
  const parts = [stamp(shim), ...SHIM_ENV.map((name) => `${name}=${process.env[name] ?? ""}`)];
  const pyenvRoot = process.env.PYENV_ROOT || join(homedir(), ".pyenv");
  const dirs = [process.env.PYENV_DIR || process.cwd()];
  while (dirname(dirs.at(-1)!) !== dirs.at(-1)) dirs.push(dirname(dirs.at(-1)!));
  for (const dir of [...dirs, homedir()]) for (const name of VERSION_FILES) parts.push(stamp(join(dir, name)));
  parts.push(stamp(join(pyenvRoot, "version")));
  return parts.join("\0");
}

/** undefined when missing or unreadable: the shim is started. */
function readPythonCache(outDir: string): PythonCache | undefined {
  const data = readCacheJson<PythonCache>(join(outDir, PYTHON_CACHE_FILE));
  return typeof data?.key === "string" && typeof data.executable === "string" ? (data as PythonCache) : undefined;
}

/**
 * The command to start for `python` (the configured interpreter): the real interpreter behind the
 * `python3` shim when this project's cache knows it for the shim's present state, else `python` itself.
 */
export async function startablePython(outDir: string, python: string): Promise<string> {
  if (python !== DEFAULT_PYTHON) return python;
  const key = shimKey();
  if (!key) return python;
  const cached = readPythonCache(outDir);
  if (cached?.key !== key || !statSync(cached.executable, { throwIfNoEntry: false })?.isFile()) return python;
  return cached.executable;
}

/** Records `executable` (the helper's sys.executable) as what `python` resolves to, when `python` is the shim. */
export async function rememberPython(outDir: string, python: string, executable: string): Promise<void> {
  if (python !== DEFAULT_PYTHON || !executable) return;
  const key = shimKey();
  if (!key) return;
  const cached = readPythonCache(outDir);
  if (cached?.key === key && cached.executable === executable) return;
  await writeFileAtomically(join(outDir, PYTHON_CACHE_FILE), JSON.stringify({ key, executable } satisfies PythonCache));
}
