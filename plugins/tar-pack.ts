/**
 * svc:tar-pack — writes `.svc/artifact.tar.gz` with the layout of docs/contracts.md section 1:
 * the app's sources, the build folder (handlers, manifest, requirements.txt), the Python SDK as
 * `svc/` and the installed dependencies as `site-packages/`. Deterministic and streaming (see
 * _tar.ts). When the inputs' fingerprint equals the last artifact's, the artifact is reused as is.
 * After the run, failed or not, the build folder is removed unless `--keep-build`, which also
 * writes the artifact's whole tree — what a worker sees at /app — to `.svc/artifact/` to inspect
 * (the build folder holds only the generated files the pack adds to the app's own).
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { SVC_PATHS } from "../core/package-root.ts";
import type { Artifact, ArtifactEntry, BuildContext, SvcPlugin } from "../core/types.ts";
import { fileIndexOf, PROGRESS_MIN_BYTES, type FileIndex } from "./_file-index.ts";
import { readCacheJson } from "./_fs.ts";
import { mapLimit } from "../core/map-limit.ts";
import { comparePaths, GZIP_LEVEL, writeTarGz, type TarFile } from "./_tar.ts";
import { processDeflateCache } from "./_deflate-cache.ts";
import { deflatedChunksRoot } from "./_install/cache-root.ts";

export const PLUGIN_NAME = "svc:tar-pack";
export const ARTIFACT_FILE = "artifact.tar.gz";
/** Fingerprint of the last artifact's inputs, for the nothing-changed fast path. */
export const PACK_STATE_FILE = "pack-state.json";
/** `--keep-build`: the artifact unpacked, under `.svc/`. */
export const KEPT_TREE_DIR = "artifact";
/** Bump when the layout or the tar encoding changes: old artifacts are then never reused. */
const FORMAT_VERSION = 5; // 2: gzip level 6; 3: files that do not compress stored; 4: level 4 in parallel chunks; 5: each top-level folder starts afresh (plugins/_tar.ts)

/** The Python SDK shipped in this package (plugins get it as ctx.svc.runtimeDir). */
export const SDK_DIR = SVC_PATHS.runtimeDir;

export interface TarPackMeta {
  /** True when the previous artifact was reused (inputs unchanged). */
  reused: boolean;
  fingerprint: string;
}

// What this plugin tells the stages after it (and benches) in ctx.meta: docs/plugins.md.
declare module "../core/types.ts" {
  interface PluginMeta {
    [PLUGIN_NAME]: TarPackMeta;
  }
}

interface PackState {
  version: number;
  fingerprint: string;
  artifact: Omit<Artifact, "path">;
}

/** Every file under `dir` (POSIX paths relative to it), following file symlinks, skipping `skip`ped names. */
export async function walkFiles(dir: string, skip: (name: string) => boolean = () => false): Promise<Array<{ rel: string; abs: string }>> {
  const out: Array<{ rel: string; abs: string }> = [];
  async function visit(abs: string, rel: string): Promise<void> {
    for (const entry of await readdir(abs, { withFileTypes: true })) {
      if (skip(entry.name)) continue;
      const childAbs = join(abs, entry.name);
      const childRel = rel ? `${rel}/${entry.name}` : entry.name;
      let isDir = entry.isDirectory();
      let isFile = entry.isFile();
      if (entry.isSymbolicLink()) {
        const target = await stat(childAbs).catch(() => undefined);
        // a link to a folder could loop: only links to files are followed
        isFile = Boolean(target?.isFile());
        isDir = false;
      }
      if (isDir) await visit(childAbs, childRel);
      else if (isFile) out.push({ rel: childRel, abs: childAbs });
    }
  }
  if (existsSync(dir)) await visit(dir, "");
  return out;
}

/** stat and fingerprint reads in flight at once (big trees would run out of file handles). */
const FILE_CONCURRENCY = 64;

const skipPycache = (name: string) => name === "__pycache__" || name.endsWith(".pyc");

/** What goes into the artifact, by group; later groups override earlier ones path by path. */
interface Groups {
  /** The app's sources, as archive paths (POSIX, relative to the root: the same as their source). */
  sources: string[];
  /** The other groups' files (SDK, build folder, listed dependencies), in override order. */
  others: Array<{ path: string; source: string }>;
  /** Inputs whose files are described by a key instead of one by one (the content-addressed deps cache). */
  keyed: string[];
  /** Adds a file to the groups, warning when an earlier group put a file at the same path. */
  add(path: string, source: string, group: string): void;
}

/**
 * Lists the groups, warning about a path that two groups both put into the artifact. Dependencies
 * from the content-addressed cache stay a key (the fingerprint needs no more); they are listed
 * file by file (`listDeps`) only when the artifact is written.
 */
async function listGroups(ctx: BuildContext): Promise<Groups> {
  const sources: string[] = [];
  for (const file of ctx.sourceFiles) {
    const rel = file.split("\\").join("/").replace(/^\.\//, "");
    if (rel !== ".svc" && !rel.startsWith(".svc/")) sources.push(rel);
  }
  const groupOf = new Map<string, string>(sources.map((rel) => [rel, "app source"]));
  const others: Groups["others"] = [];
  const add = (path: string, source: string, group: string) => {
    const previous = groupOf.get(path);
    // the resolved requirements.txt replacing the app's own is the contract, not a clash
    if (previous && previous !== group && path !== "requirements.txt")
      ctx.logger.warn(`${path}: the ${group} file replaces the ${previous} file of the same path in the artifact`);
    groupOf.set(path, group);
    others.push({ path, source });
  };
  for (const { rel, abs } of await walkFiles(ctx.svc.runtimeDir, skipPycache)) add(`svc/${rel}`, abs, "svc SDK");
  for (const { rel, abs } of await walkFiles(ctx.buildDir)) add(rel, abs, "build");
  const keyed: string[] = [];
  if (ctx.depsDir) {
    const pip = ctx.meta.get("svc:pip-install");
    if (pip?.hash !== undefined && ctx.depsDir.includes(pip.hash)) keyed.push(`deps:${pip.hash}`);
    else await listDeps(ctx.depsDir, add);
  }
  return { sources, others, keyed, add };
}

async function listDeps(depsDir: string, add: Groups["add"]): Promise<void> {
  for (const { rel, abs } of await walkFiles(depsDir, skipPycache)) add(`site-packages/${rel}`, abs, "dependency");
}

/** The artifact's files in archive order: archive path → source, the last group to name a path winning. */
async function tarFiles(ctx: BuildContext, groups: Groups, index: FileIndex): Promise<TarFile[]> {
  const byPath = new Map<string, string>(groups.sources.map((rel) => [rel, join(ctx.root, rel)]));
  for (const { path, source } of groups.others) byPath.set(path, source);
  // sizes the run's file index already knows (sources, build files) need no second stat; -1: not known, stat below
  const files: TarFile[] = [...byPath].map(([path, source]) => ({ path, source, size: index.knownSize(source) ?? -1 }));
  await mapLimit(
    files.filter((file) => file.size < 0),
    FILE_CONCURRENCY,
    async (file) => (file.size = (await stat(file.source)).size),
  );
  files.sort((a, b) => comparePaths(a.path, b.path));
  return files;
}

/** Content hashes in flight at once (each file streams in small chunks). */
const HASH_CONCURRENCY = 16;

/**
 * A digest of everything that decides the artifact's bytes: the sources' list digest (the one the
 * manifest stage took, kept by the run's file index), then each other file's path, size and content
 * hash in group order. Unchanged files are not read (docs/manifest.md, "File index").
 */
async function fingerprint(ctx: BuildContext, groups: Groups, index: FileIndex): Promise<string> {
  const hash = createHash("sha256");
  hash.update(
    `svc-artifact-v${FORMAT_VERSION}\0${groups.keyed.join("\0")}\0sources\0${await index.listDigest(ctx.root, groups.sources, (total) => ctx.logger.progress("pack: hashing the app's files", total))}\0`,
  );
  const parts = await index.digestAll(
    groups.others.map((file) => file.source),
    HASH_CONCURRENCY,
    (total) => ctx.logger.progress("pack: hashing the build's files", total),
  );
  hash.update(groups.others.map((file, i) => `${file.path}\0${parts[i]!.size}\0${parts[i]!.sha256}\0`).join(""));
  return hash.digest("hex");
}

function readState(file: string): PackState | undefined {
  const state = readCacheJson<PackState>(file);
  return state?.version === FORMAT_VERSION && state.fingerprint && state.artifact ? (state as PackState) : undefined;
}

export async function packArtifact(ctx: BuildContext): Promise<Artifact> {
  await mkdir(ctx.outDir, { recursive: true });
  const path = join(ctx.outDir, ARTIFACT_FILE);
  const stateFile = join(ctx.outDir, PACK_STATE_FILE);

  // fast path: same inputs as the artifact on disk → reuse it
  const groups = await listGroups(ctx);
  const index = await fileIndexOf(ctx);
  const print = await fingerprint(ctx, groups, index);
  // the last stage to use the index: entries of files no longer among the inputs are dropped
  await index.save({ prune: true });
  const state = readState(stateFile);
  const onDisk = await stat(path).catch(() => undefined);
  if (state && state.fingerprint === print && onDisk?.size === state.artifact.size) {
    ctx.meta.set(PLUGIN_NAME, { reused: true, fingerprint: print } satisfies TarPackMeta);
    ctx.logger.debug(`artifact unchanged (${print.slice(0, 12)}): reusing ${relative(ctx.root, path)}`);
    return { path, ...state.artifact };
  }

  if (groups.keyed.length > 0 && ctx.depsDir) await listDeps(ctx.depsDir, groups.add); // the archive needs them one by one
  const files = await tarFiles(ctx, groups, index);
  const temporary = `${path}.tmp-${process.pid}`;
  await rm(stateFile, { force: true });
  try {
    const unpacked = files.reduce((sum, file) => sum + file.size, 0);
    const bar = unpacked >= PROGRESS_MIN_BYTES ? ctx.logger.progress(`pack: writing ${relative(ctx.root, path)}`, unpacked) : undefined;
    // the dependencies' chunks: on disk when their tree is content-addressed (the same for every app with
    // the same requirements), else in memory; the runtime's in memory (a dev server packs it on every reload)
    const segments = new Map([
      ["site-packages", groups.keyed.length > 0 ? deflatedChunksRoot() : undefined],
      ["svc", undefined],
    ]);
    const reuse = { cache: processDeflateCache, segments };
    const hitsBefore = processDeflateCache.hits;
    const { sha256, size } = await writeTarGz(files, temporary, { level: GZIP_LEVEL, onBytes: bar?.add, reuse }).finally(() => bar?.end());
    ctx.logger.debug(`pack: ${processDeflateCache.hits - hitsBefore} chunk(s) reused from earlier packs`);
    await rename(temporary, path);
    const entries: ArtifactEntry[] = files.map((file) => ({ path: file.path, size: file.size }));
    const artifact: Artifact = { path, sha256, size, unpackedSize: unpacked, entries };
    const { path: _path, ...stored } = artifact;
    await writeFile(stateFile, JSON.stringify({ version: FORMAT_VERSION, fingerprint: print, artifact: stored } satisfies PackState));
    ctx.meta.set(PLUGIN_NAME, { reused: false, fingerprint: print } satisfies TarPackMeta);
    return artifact;
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/** `--keep-build`: the artifact's tree in `.svc/artifact/` (replacing an older one), the build folder as it is. */
async function keepTree(ctx: BuildContext): Promise<void> {
  if (!ctx.artifact) return;
  const dir = join(ctx.outDir, KEPT_TREE_DIR);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const { extract } = await import("tar"); // --keep-build only
  await extract({ file: ctx.artifact.path, cwd: dir });
  ctx.logger.info(
    `kept the build: the artifact's tree in ${relative(ctx.root, dir)}/ (what a worker sees at /app), the generated files in ${relative(ctx.root, ctx.buildDir)}/`,
  );
}

export function tarPack(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.pack.tapPromise(PLUGIN_NAME, async (artifact, ctx) => artifact ?? packArtifact(ctx));
      pipeline.hooks.done.tapPromise(PLUGIN_NAME, async (ctx) => {
        // after a pack or a failed build (spec 2.5: removed by default); a run that stopped earlier keeps its output
        if (ctx.options.keepBuild) return keepTree(ctx);
        if (!ctx.artifact && !ctx.meta.has("error")) return;
        await rm(ctx.buildDir, { recursive: true, force: true });
      });
    },
  };
}
