/**
 * A per-project stat cache of content hashes, like git's index (docs/manifest.md, "File index"):
 * `.svc/cache/file-index.json` maps each file hashed before to its size, mtime, ctime, inode and the
 * sha256 of its bytes. A file whose stat still matches is not read again; any other is hashed while
 * streaming, so no file is ever held whole in memory. One index per build run, shared by the stages
 * through fileIndexOf(ctx).
 *
 * Racy-clean rule: an entry is trusted only when its file's mtime and ctime are at least
 * RACY_WINDOW_MS older than the moment its hashing began; a file written in that window could be
 * rewritten with the same size and timestamps without the stat showing it, so it is hashed again on
 * the next run (and trusted from then on once it has aged).
 *
 * A build with nothing changed writes nothing: the index is saved only when an entry was added or
 * replaced, or (at the run's last save, `prune`) when entries of files the run no longer uses are to
 * be dropped. Files under the build folder are rewritten on every run (it is removed afterwards), so
 * their entries serve the run only and are never saved.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { BuildContext } from "../core/types.ts";
import { readCacheJson, writeFileAtomically } from "./_fs.ts";
import { mapLimit } from "../core/map-limit.ts";
import { RACY_WINDOW_MS, type StatKey, statKey } from "../core/file-stat.ts";

export const FILE_INDEX_FILE = "cache/file-index.json";
const INDEX_VERSION = 1;
/** Files up to this size are read in one call; bigger ones are streamed in STREAM_CHUNK pieces. */
const WHOLE_READ_LIMIT = 1 << 20;
const STREAM_CHUNK = 256 << 10;
const META_KEY = "svc:file-index";
/** Files hashed at once by listDigest (each streams in small chunks: memory stays bounded whatever their size). */
const LIST_HASH_CONCURRENCY = 8;

export interface FileDigest {
  size: number;
  /** sha256 of the bytes, hex. */
  sha256: string;
}

/** [size, mtimeNs, ctimeNs, ino, sha256, hashedAtMs] */
type Entry = [number, string, string, string, string, number];

const sameStat = (entry: Entry, key: StatKey) => entry[0] === key.size && entry[1] === key.mtimeNs && entry[2] === key.ctimeNs && entry[3] === key.ino;

/** sha256 of a file, streamed in fixed-size chunks; `onBytes` hears each chunk's length (progress). */
export async function hashFile(file: string, onBytes?: (bytes: number) => void): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file, { highWaterMark: STREAM_CHUNK }) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    onBytes?.(chunk.length);
  }
  return hash.digest("hex");
}

/** Hashing less than this is quick whatever the machine: no progress line for it. */
export const PROGRESS_MIN_BYTES = 64 * 1024 * 1024;

/** Opens a progress line over `totalBytes` to hash (the stage's logger.progress), or none. */
export type HashProgress = (totalBytes: number) => { add(bytes: number): void; end(): void } | undefined;

export class FileIndex {
  /** Files read and bytes hashed in this run (the rest came from the index). */
  readonly stats = { hashedFiles: 0, hashedBytes: 0, reusedFiles: 0 };
  private readonly previous: Map<string, Entry>;
  private readonly current = new Map<string, Entry>();
  /** An entry was added or replaced since the last save. */
  private changed = false;
  /** listDigest answers of this run, by root and file list. */
  private readonly listDigests = new Map<string, Promise<string>>();

  private constructor(
    readonly file: string,
    previous: Map<string, Entry>,
    private readonly racyWindowMs: number,
    private readonly transientDir: string | undefined,
  ) {
    this.previous = previous;
  }

  /**
   * `racyWindowMs` is for tests: 0 trusts any entry hashed after its file last changed.
   * `transientDir`: a folder whose files are rewritten on every run; their entries are not saved.
   */
  static async open(file: string, { racyWindowMs = RACY_WINDOW_MS, transientDir }: { racyWindowMs?: number; transientDir?: string } = {}): Promise<FileIndex> {
    // missing or unreadable: everything is hashed again
    const data = readCacheJson<{ version: number; entries: Record<string, Entry> }>(file);
    const entries = data?.version === INDEX_VERSION && data.entries ? new Map(Object.entries(data.entries)) : new Map<string, Entry>();
    return new FileIndex(file, entries, racyWindowMs, transientDir === undefined ? undefined : join(transientDir, "/"));
  }

  /**
   * The file's size and content hash; read only when the index cannot vouch for it. A file already
   * digested or written in this run is not looked at again. `keepBytes` answers the bytes too when
   * the file had to be read whole (up to 1 MB), so a caller that needs them reads it once.
   */
  async digest(
    path: string,
    { keepBytes = false, onBytes }: { keepBytes?: boolean; onBytes?: (bytes: number) => void } = {},
  ): Promise<FileDigest & { bytes?: Buffer }> {
    const found = this.lookup(path);
    if ("digest" in found) return found.digest;
    const { key } = found;
    const hashedAt = Date.now();
    let bytes: Buffer | undefined;
    let sha256: string;
    if (key.size <= WHOLE_READ_LIMIT) {
      bytes = await readFile(path);
      sha256 = createHash("sha256").update(bytes).digest("hex");
      onBytes?.(bytes.length);
    } else sha256 = await hashFile(path, onBytes);
    const after = statKey(path);
    this.stats.hashedFiles++;
    this.stats.hashedBytes += key.size;
    // changed while being read: answer what was read but do not record it
    if (sameStat([after.size, after.mtimeNs, after.ctimeNs, after.ino, "", 0], key))
      this.set(path, [key.size, key.mtimeNs, key.ctimeNs, key.ino, sha256, hashedAt]);
    return { size: bytes?.length ?? key.size, sha256, ...(keepBytes && bytes ? { bytes } : {}) };
  }

  /**
   * The file's size and content hash when this run or the index can vouch for them (one stat, no
   * read), else undefined: digest() then reads the file. Synchronous, so that a fingerprint over
   * many unchanged files costs one stat each and no trip through the event loop.
   */
  known(path: string): FileDigest | undefined {
    const found = this.lookup(path);
    return "digest" in found ? found.digest : undefined;
  }

  /** What the run or the index knows of the file; else its stat, for the read that must follow. */
  private lookup(path: string): { digest: FileDigest } | { key: StatKey } {
    const seen = this.current.get(path);
    if (seen) return { digest: { size: seen[0], sha256: seen[4] } };
    const key = statKey(path);
    const known = this.previous.get(path);
    if (!known || !sameStat(known, key) || !this.aged(key, known)) return { key };
    this.current.set(path, known);
    this.stats.reusedFiles++;
    return { digest: { size: key.size, sha256: known[4] } };
  }

  /**
   * sha256 hex over `files` (paths under `root`) in path order by UTF-16 code unit: for each, the
   * path, a NUL, its byte length, a NUL, the sha256 of its bytes in hex, a NUL (the manifest's
   * fingerprint, docs/manifest.md). Kept for the run: the pack stage asks again for the same sources
   * and gets the answer without a second pass over them.
   */
  listDigest(root: string, files: readonly string[], progress?: HashProgress): Promise<string> {
    const key = `${root}\0${files.join("\0")}`;
    let digest = this.listDigests.get(key);
    if (!digest) {
      digest = this.computeListDigest(root, files, progress);
      this.listDigests.set(key, digest);
      digest.catch(() => this.listDigests.delete(key)); // a failed read is not remembered
    }
    return digest;
  }

  private async computeListDigest(root: string, files: readonly string[], progress?: HashProgress): Promise<string> {
    const sorted = [...files].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const paths = sorted.map((file) => join(root, file));
    const digests = await this.digestAll(paths, LIST_HASH_CONCURRENCY, progress);
    const hash = createHash("sha256");
    hash.update(sorted.map((file, i) => `${file}\0${digests[i]!.size}\0${digests[i]!.sha256}\0`).join(""));
    return hash.digest("hex");
  }

  /**
   * Digests of `paths` in order: the known ones from one stat each, the others read `concurrency` at
   * a time, under one progress line when they add up to PROGRESS_MIN_BYTES or more.
   */
  async digestAll(paths: readonly string[], concurrency: number, progress?: HashProgress): Promise<FileDigest[]> {
    const found = paths.map((path) => this.lookup(path));
    const digests = found.map((f) => ("digest" in f ? f.digest : undefined));
    const total = found.reduce((sum, f) => sum + ("key" in f ? f.key.size : 0), 0);
    const bar = total >= PROGRESS_MIN_BYTES ? progress?.(total) : undefined;
    try {
      await mapLimit(
        [...digests.keys()].filter((i) => !digests[i]),
        concurrency,
        async (i) => (digests[i] = await this.digest(paths[i]!, { onBytes: bar?.add })),
      );
    } finally {
      bar?.end();
    }
    return digests as FileDigest[];
  }

  /** The size of a file digested or written earlier in this run, without looking at it again. */
  knownSize(path: string): number | undefined {
    return this.current.get(path)?.[0];
  }

  /**
   * Whether `path` is known to hold exactly the bytes hashing to `sha256` without reading it.
   * A false answer means "unknown", not "different".
   */
  async holds(path: string, sha256: string): Promise<boolean> {
    let key: StatKey;
    try {
      key = statKey(path);
    } catch {
      return false;
    }
    const entry = this.current.get(path) ?? this.previous.get(path);
    if (!entry || !sameStat(entry, key) || entry[4] !== sha256) return false;
    if (this.current.get(path) !== entry && !this.aged(key, entry)) return false;
    this.current.set(path, entry);
    this.stats.reusedFiles++;
    return true;
  }

  /** Records that `path` now holds the bytes hashing to `sha256` (its writer knows them). */
  async record(path: string, sha256: string, writtenAt: number): Promise<void> {
    const key = statKey(path);
    this.set(path, [key.size, key.mtimeNs, key.ctimeNs, key.ino, sha256, writtenAt]);
  }

  private set(path: string, entry: Entry): void {
    this.current.set(path, entry);
    if (!this.isTransient(path)) this.changed = true;
  }

  private isTransient(path: string): boolean {
    return this.transientDir !== undefined && path.startsWith(this.transientDir);
  }

  /** The racy-clean rule: the file last changed well before its hashing began. */
  private aged(key: StatKey, entry: Entry): boolean {
    return key.changedMs < entry[5] - this.racyWindowMs;
  }

  /**
   * Writes the index when an entry was added or replaced: the entries of this run over the earlier
   * ones, so a run that stops or fails later still keeps what it hashed. `prune` (the run's last
   * save) keeps only the entries this run used, and writes when that drops any.
   */
  async save({ prune = false }: { prune?: boolean } = {}): Promise<void> {
    if (!this.changed && !prune) return;
    const kept = new Map([...this.current].filter(([path]) => !this.isTransient(path)));
    const dropping = prune && [...this.previous.keys()].some((path) => !kept.has(path));
    if (!this.changed && !dropping) return;
    const merged = prune ? kept : new Map([...this.previous, ...kept]);
    const entries = Object.fromEntries([...merged].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    await writeFileAtomically(this.file, JSON.stringify({ version: INDEX_VERSION, entries }));
    this.changed = false;
  }
}

// The run's one index travels between the stages in ctx.meta (docs/plugins.md, "Passing data between plugins").
declare module "../core/types.ts" {
  interface PluginMeta {
    [META_KEY]: Promise<FileIndex>;
  }
}

/** The run's file index (opened on first use, kept in ctx.meta). */
export function fileIndexOf(ctx: BuildContext): Promise<FileIndex> {
  let index = ctx.meta.get(META_KEY);
  if (!index) {
    index = FileIndex.open(join(ctx.outDir, FILE_INDEX_FILE), { transientDir: ctx.buildDir });
    ctx.meta.set(META_KEY, index);
  }
  return index;
}
