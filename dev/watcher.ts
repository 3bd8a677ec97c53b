/**
 * The reload watcher: chokidar 4 over the project root, ignoring what discovery ignores (the
 * built-in ignores — .git/, .svc/, .platform/, node_modules/, __pycache__/, virtualenvs, … —
 * `.gitignore`, `.svcignore` and config `ignore`). Output folders are never watched: a build writes
 * into .svc/ and the resource cache into .platform/, and watching them would reload forever.
 * Changes are debounced (5 ms, after chokidar's 6 ms wait for a write to settle) into one batch of
 * relative paths; a file whose bytes are those of the last batch that named it is left out, so an
 * editor that writes a file twice (a save, then a touch or a second identical write) reloads once
 * (docs/dev-server.md, "Reload").
 */
import { createHash } from "node:crypto";
import type { Stats } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { watch, type FSWatcher } from "chokidar";
import type { Ignore } from "ignore";
import { createIgnore } from "../plugins/index.ts";

/** Short: each file's change already waited SETTLE_MS, so files saved together arrive together (issue 42: 15 ms of save → new output). */
export const DEBOUNCE_MS = 5;
/**
 * chokidar's awaitWriteFinish: a file's size must hold this long before its change is reported. An
 * editor's truncate-then-write is over in well under a millisecond; a file read mid-write anyway
 * changes again, and its next batch has its final bytes (20 ms was ~15 ms of save → new output).
 */
const SETTLE_MS = 6;

/** Dot-files that change what gets built, although they are not app sources. */
const WATCHED_DOTFILES = new Set([".gitignore", ".svcignore"]);
/** Folders never worth a look (also when a .gitignore un-ignores them). */
const NEVER = new Set([".git", ".svc", ".platform", "node_modules", "__pycache__"]);

/** True when the dev server must not watch this path (POSIX, relative to the root; "" is the root). */
export function isIgnoredPath(ig: Ignore, rel: string, isDirectory: boolean | undefined): boolean {
  if (rel === "" || rel === ".") return false;
  const segments = rel.split("/");
  if (segments.some((segment) => NEVER.has(segment))) return true;
  const name = segments[segments.length - 1]!;
  // Hidden entries are never sources (discovery skips them), except the ignore files themselves.
  if (segments.some((segment) => segment.startsWith("."))) return !(segments.length === 1 && WATCHED_DOTFILES.has(name));
  if (name.endsWith(".pyc") || name.endsWith("~") || name.endsWith(".swp") || name.endsWith(".tmp")) return true;
  if (isDirectory !== false && ig.ignores(`${rel}/`)) return true;
  return isDirectory !== true && ig.ignores(rel);
}

export interface WatchOptions {
  root: string;
  /** Config `ignore` patterns. */
  ignore?: readonly string[];
  debounceMs?: number;
  onChange(files: string[]): void;
  onError?(error: unknown): void;
}

export interface ProjectWatcher {
  /** Resolves once the initial scan is done (changes after it are reported). */
  ready: Promise<void>;
  /** Re-reads .gitignore / .svcignore / config ignores (after they changed). */
  refreshIgnores(extra?: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

export async function watchProject(options: WatchOptions): Promise<ProjectWatcher> {
  let ig = await createIgnore(options.root, options.ignore ?? []);
  const debounceMs = options.debounceMs ?? DEBOUNCE_MS;
  const pending = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const toRel = (path: string) => relative(options.root, path).split(sep).join("/");
  const watcher: FSWatcher = watch(options.root, {
    ignoreInitial: true,
    ignored: (path: string, stats?: Stats) => isIgnoredPath(ig, toRel(path), stats ? stats.isDirectory() : undefined),
    // Editors write in several steps; wait for the file to settle a little.
    awaitWriteFinish: { stabilityThreshold: SETTLE_MS, pollInterval: 2 },
  });

  /** Content hash of each file as the last batch that named it saw it ("" once deleted). */
  const seen = new Map<string, string>();
  const contentOf = (rel: string) =>
    readFile(join(options.root, rel)).then(
      (bytes) => createHash("sha256").update(bytes).digest("hex"),
      () => "",
    );
  const flush = async () => {
    timer = undefined;
    if (closed || pending.size === 0) return;
    const candidates = [...pending].sort();
    pending.clear();
    const hashes = await Promise.all(candidates.map(contentOf));
    const files = candidates.filter((rel, i) => seen.get(rel) !== hashes[i]);
    for (const [i, rel] of candidates.entries()) seen.set(rel, hashes[i]!);
    if (!closed && files.length) options.onChange(files);
  };
  watcher.on("all", (event, path) => {
    if (event === "addDir") return;
    const rel = toRel(path);
    if (!rel || isIgnoredPath(ig, rel, event === "unlinkDir")) return;
    pending.add(rel);
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => void flush().catch((error: unknown) => options.onError?.(error)), debounceMs);
  });
  watcher.on("error", (error) => options.onError?.(error));
  const ready = new Promise<void>((resolve) => watcher.once("ready", () => resolve()));

  return {
    ready,
    async refreshIgnores(extra = options.ignore ?? []) {
      ig = await createIgnore(options.root, extra);
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await watcher.close();
    },
  };
}
