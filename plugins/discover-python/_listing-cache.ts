/**
 * The app's file list kept between runs, in the manner of git's untracked cache (docs/manifest.md,
 * "File listing"): `.svc/cache/listing.json` keeps, for every folder of the walk, its stat (mtime,
 * ctime, inode), the moment it was listed and what the listing found (source files, folders to walk
 * into). Adding, removing or renaming an entry changes its folder's mtime, so a folder whose stat
 * still matches is neither read again nor are its names matched against the ignore rules: on a build
 * with nothing changed the walk costs one stat per folder, however many files the folders hold.
 * The cache belongs to one set of ignore rules (built-ins, .gitignore, .svcignore, config `ignore`);
 * other rules start afresh. The file index's racy-clean rule holds for folders too.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { Ignore } from "ignore";
import { RACY_WINDOW_MS, statKey } from "../../core/file-stat.ts";
import { readCacheJson, writeFileAtomically } from "../_fs.ts";
import { BUILTIN_IGNORES, compareCodeUnits, ignoreFrom, listFolder, readIgnoreSources } from "./_files.ts";

export const LISTING_CACHE_FILE = "cache/listing.json";
/** Bump when what a listing keeps, or which names count as sources (isSourceFile), changes. */
const CACHE_VERSION = 1;

/** [mtimeNs, ctimeNs, ino, listedAtMs, source file names, names of the folders to walk into] */
type Folder = [string, string, string, number, string[], string[]];
interface CacheFile {
  key: string;
  /** By the folder's path relative to the root with a trailing "/" ("" for the root). */
  folders: Record<string, Folder>;
}

export interface ListingOptions {
  /** For tests: 0 trusts any folder listed after it last changed. */
  racyWindowMs?: number;
}

/** The folders of the last listing under the same ignore rules; none (every folder is listed again) when it cannot be read. */
function readCache(file: string, key: string): Record<string, Folder> {
  const data = readCacheJson<CacheFile>(file);
  return data?.key === key && data.folders ? data.folders : {};
}

/**
 * listSourceFiles (same answer, sorted by code unit) reading only the folders that changed since
 * `cacheFile` was written. `folders`: every folder of the walk, by its path relative to the root
 * with a trailing "/" ("" for the root); `stats` counts the folders read and those taken from the cache.
 */
export async function listSourceFilesWithCache(
  root: string,
  extraIgnores: readonly string[],
  cacheFile: string,
  { racyWindowMs = RACY_WINDOW_MS }: ListingOptions = {},
): Promise<{ files: string[]; folders: string[]; stats: { listedFolders: number; reusedFolders: number } }> {
  const sources = await readIgnoreSources(root, extraIgnores);
  const key = createHash("sha256")
    .update(JSON.stringify([CACHE_VERSION, BUILTIN_IGNORES, sources]))
    .digest("hex");
  const previous = readCache(cacheFile, key);
  const next: Record<string, Folder> = {};
  const stats = { listedFolders: 0, reusedFolders: 0 };
  const files: string[] = [];
  let ig: Ignore | undefined; // built only when a folder has to be listed
  async function walk(dir: string, prefix: string): Promise<void> {
    // the stat is taken before the listing: an entry added after it shows on the next run
    const { mtimeNs, ctimeNs, ino, changedMs } = statKey(dir);
    let folder = previous[prefix];
    if (folder && folder[0] === mtimeNs && folder[1] === ctimeNs && folder[2] === ino && changedMs < folder[3] - racyWindowMs) {
      stats.reusedFolders++;
    } else {
      const listedAt = Date.now();
      const found = await listFolder(dir, prefix, (ig ??= ignoreFrom(sources)));
      folder = [mtimeNs, ctimeNs, ino, listedAt, found.files, found.folders];
      stats.listedFolders++;
    }
    next[prefix] = folder;
    for (const name of folder[4]) files.push(prefix + name);
    await Promise.all(folder[5].map((name) => walk(join(dir, name), `${prefix}${name}/`)));
  }
  await walk(root, "");
  if (stats.listedFolders > 0 || Object.keys(previous).length !== stats.reusedFolders) {
    await writeFileAtomically(cacheFile, JSON.stringify({ key, folders: next } satisfies CacheFile));
  }
  return { files: files.sort(compareCodeUnits), folders: Object.keys(next), stats };
}
