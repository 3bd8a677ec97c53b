/**
 * `svc build` with nothing changed, answered without running the pipeline: as make and Gradle's
 * UP-TO-DATE, the last successful build leaves `.svc/cache/build-record.json`, the stat of every
 * input it read (ctx.sourceFiles and ctx.dependencies, as webpack's file and context dependencies,
 * and svc's own code), a digest of the environment it depended on, what it was asked for and what
 * it answered. The next build stats those inputs and the artifact; when every stat matches and the
 * environment and request are the same, it prints the recorded answer and stops. Importing this
 * module loads neither zod nor the pipeline: that is the point (docs/architecture.md, "Startup").
 *
 * What is never recorded: a build whose svc.config.ts adds or disables plugins (what a plugin reads
 * is its own business), and a build any of whose inputs changed within RACY_WINDOW_MS before it started (the
 * file index's racy-clean rule: a rewrite in the same timestamp could not be seen) or whose app
 * folder gained or lost an entry while it ran (that folder is compared by its names, as the build
 * writes `.svc/` in it).
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { RACY_WINDOW_MS, statKey } from "./file-stat.ts";
import { FROM_SOURCES, packagePath, SVC_PATHS } from "./package-root.ts";

export const BUILD_RECORD_FILE = join(".svc", "cache", "build-record.json");
/** Bump when what a record keeps, or what a build reads, changes. */
const RECORD_VERSION = 1;
/**
 * The environment svc's stages read that can change what they build (the interpreters, the installer
 * and its settings), by prefix or whole name. Not SVC_CACHE_DIR: where installs are kept changes no
 * artifact (the cache is keyed by what was installed).
 */
const ENV_PREFIXES = ["PIP_", "UV_", "PYTHON", "PYENV", "CONDA_"];
const ENV_NAMES = ["SVC_PYTHON", "SVC_PYTHON_GPU", "SVC_INSTALLER", "PATH", "HOME", "VIRTUAL_ENV", "XDG_CONFIG_HOME"];
/** This module's folder: core/ from sources, the folder of svc's chunks (dist/) in a build. */
const CODE_DIR = dirname(fileURLToPath(import.meta.url));

/** What the record keeps of a build: its inputs' stats, by absolute path, and its answer. */
interface BuildRecord<Result> {
  version: number;
  /** Which svc built it (see SVC_IDENTITY). */
  svc: string;
  /** The app's folder: a copy of the folder, .svc/ with it, is another app whose inputs are elsewhere. */
  root: string;
  request: string;
  env: string;
  /** The variables the config read ("*": all of them). */
  configEnv: string[];
  /** The app folder's entries (appFolderEntries). */
  appFolder: string;
  /** Path → stat (see stamp); "-" for a file that was absent. */
  inputs: Record<string, string>;
  artifact: { path: string; stamp: string };
  result: Result;
}

/** The stat a change shows in: size, mtime, ctime and inode; "-" when there is nothing at the path. */
function stamp(path: string): { stamp: string; changedMs: number } {
  try {
    const key = statKey(path);
    return { stamp: `${key.size}:${key.mtimeNs}:${key.ctimeNs}:${key.ino}`, changedMs: key.changedMs };
  } catch {
    return { stamp: "-", changedMs: 0 };
  }
}

/** Every file under `dir` (absolute paths), Python byte-code caches aside. */
function filesUnder(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "__pycache__") continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) filesUnder(path, out);
    else out.push(path);
  }
  return out;
}

/**
 * svc's own code: a build's output changes with it. From sources, the TypeScript of the build path;
 * from a build of svc, the folder of its chunks; and either way the Python runtime and helper.
 */
function svcCode(): string[] {
  if (FROM_SOURCES) return [packagePath("cli"), packagePath("core"), packagePath("plugins"), SVC_PATHS.runtimeDir].flatMap((dir) => filesUnder(dir));
  const own = readdirSync(CODE_DIR, { withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(CODE_DIR, entry.name));
  return [...own, ...[SVC_PATHS.runtimeDir, SVC_PATHS.discoverScript].flatMap((dir) => filesUnder(dir))];
}

/** A digest of the environment a build depends on: svc's own variables and those the config read. */
function envDigest(configEnv: readonly string[]): string {
  const all = configEnv.includes("*");
  const names = Object.keys(process.env).filter((name) => all || ENV_NAMES.includes(name) || ENV_PREFIXES.some((prefix) => name.startsWith(prefix)));
  const read = new Set([...names, ...configEnv.filter((name) => name !== "*")]);
  const pairs = [...read].sort().map((name) => [name, process.env[name] ?? null]);
  return createHash("sha256").update(JSON.stringify(pairs)).digest("hex");
}

const recordPath = (root: string) => join(root, BUILD_RECORD_FILE);

/** svc's version and where its code runs from: another copy of svc (sources, a build, another install) builds afresh. */
const SVC_IDENTITY = `${SVC_PATHS.version} ${CODE_DIR}`;

/**
 * The names in the app's folder but `.svc/`: that folder is compared by its entries, not its stat,
 * because the build itself makes `.svc/` there (the first build of an app would otherwise find its
 * own change, too recent to trust).
 */
const appFolderEntries = (root: string): string =>
  readdirSync(root)
    .filter((name) => name !== ".svc")
    .sort()
    .join("/");

/**
 * The recorded answer of the last build of `root` when it would build the same artifact again:
 * asked the same (`request`), in the same environment, with every input and the artifact as they
 * were. Undefined otherwise (or when there is no record, or it cannot be read).
 */
export function upToDate<Result>(root: string, request: string): { result: Result; inputs: number } | undefined {
  let record: BuildRecord<Result>;
  try {
    record = JSON.parse(readFileSync(recordPath(root), "utf8")) as BuildRecord<Result>;
  } catch {
    return undefined;
  }
  if (
    record.version !== RECORD_VERSION ||
    record.svc !== SVC_IDENTITY ||
    record.root !== root ||
    record.request !== request ||
    record.env !== envDigest(record.configEnv)
  )
    return undefined;
  if (stamp(record.artifact.path).stamp !== record.artifact.stamp || appFolderEntries(root) !== record.appFolder) return undefined;
  const inputs = Object.entries(record.inputs);
  for (const [path, recorded] of inputs) if (stamp(path).stamp !== recorded) return undefined;
  return { result: record.result, inputs: inputs.length };
}

/** A build under way (buildStarting), for recordBuild once it succeeded. */
export interface BuildStart {
  root: string;
  request: string;
  /** Date.now() before the build read anything: inputs changed after RACY_WINDOW_MS before it are not trusted. */
  startedAt: number;
  appFolder: string;
}

/** Call before the build reads anything. `root` absolute. */
export const buildStarting = (root: string, request: string): BuildStart => ({ root, request, startedAt: Date.now(), appFolder: appFolderEntries(root) });

export interface FinishedBuild<Result> {
  /** Absolute paths of every file and folder the build read. */
  inputs: Iterable<string>;
  /** The environment variables its config read. */
  configEnv: Iterable<string>;
  artifact: string;
  /** False when svc.config.ts added or disabled plugins: the build is then never skipped. */
  recordable: boolean;
  result: Result;
}

/** Records a successful build for upToDate, or removes the last record when this one cannot be trusted. */
export function recordBuild<Result>(start: BuildStart, build: FinishedBuild<Result>): void {
  const file = recordPath(start.root);
  rmSync(file, { force: true });
  // an entry added to the app's folder while the build ran may have been missed
  if (!build.recordable || appFolderEntries(start.root) !== start.appFolder) return;
  const inputs: Record<string, string> = {};
  for (const path of [...build.inputs, ...svcCode()]) {
    if (path === start.root) continue; // compared by its entries (appFolderEntries), not its stat
    const now = stamp(path);
    if (now.changedMs >= start.startedAt - RACY_WINDOW_MS) return;
    inputs[path] = now.stamp;
  }
  const configEnv = [...build.configEnv].sort();
  const record: BuildRecord<Result> = {
    version: RECORD_VERSION,
    svc: SVC_IDENTITY,
    root: start.root,
    request: start.request,
    env: envDigest(configEnv),
    configEnv,
    appFolder: start.appFolder,
    inputs,
    artifact: { path: build.artifact, stamp: stamp(build.artifact).stamp },
    result: build.result,
  };
  mkdirSync(dirname(file), { recursive: true });
  const staging = `${file}.${process.pid}.tmp`;
  writeFileSync(staging, JSON.stringify(record));
  renameSync(staging, file);
}
