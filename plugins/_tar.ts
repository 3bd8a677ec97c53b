/**
 * A deterministic, streaming .tar.gz writer (private to svc:tar-pack). Headers are encoded with the
 * `tar` package's Header/Pax classes; we drive the entry list ourselves so that every entry gets the
 * contract's fixed owner, mode and mtime whatever the file system says, and entries may come from
 * several folders. Nothing is buffered beyond one read chunk: a 1 GB tree packs in a few MB of heap.
 */
import { createHash } from "node:crypto";
import { once } from "node:events";
import { createReadStream, createWriteStream, readFileSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { constants as zlibConstants, crc32, deflateRaw, deflateRawSync } from "node:zlib";
import { errors } from "../core/errors.ts";
import { DeflateCache } from "./_deflate-cache.ts";

/** docs/contracts.md section 1. */
export const ARTIFACT_MTIME = new Date("2000-01-01T00:00:00Z");
export const FILE_MODE = 0o644;
export const DIR_MODE = 0o755;
const BLOCK = 512;
const READ_CHUNK = 1 << 20;

export interface TarFile {
  /** POSIX path inside the archive, no leading `./` or trailing `/`. */
  path: string;
  /** Absolute path on disk. */
  source: string;
  size: number;
}

export interface TarResult {
  sha256: string;
  /** Compressed bytes written. */
  size: number;
}

const SLASH = 0x2f;

/**
 * Compares POSIX paths segment by segment (by code unit), so `a/` sorts before `a-b/` and children
 * follow parents: the same order as comparing the strings with "/" below every other character,
 * which is done here without splitting (packing sorts every file of the app on every build).
 */
export function comparePaths(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return x === SLASH ? -1 : y === SLASH ? 1 : x - y;
  }
  return a.length - b.length;
}

/** The `tar` package's header classes: loaded when an artifact is written, never by a build that reuses its artifact. */
type TarCodec = Pick<typeof import("tar"), "Header" | "Pax">;

function headerBlocks({ Header, Pax }: TarCodec, path: string, type: "File" | "Directory", size: number): Buffer {
  const header = new Header({
    path,
    mode: type === "File" ? FILE_MODE : DIR_MODE,
    uid: 0,
    gid: 0,
    size,
    mtime: ARTIFACT_MTIME,
    type,
    uname: "",
    gname: "",
    linkpath: "",
  });
  const block = Buffer.alloc(BLOCK);
  header.encode(block);
  if (!header.needPax) return block;
  // long or non-ASCII path (or a file over 8 GB): a PAX extended header carries the real values
  const pax = new Pax({ path, size: size >= 0o77777777777 ? size : undefined, mtime: ARTIFACT_MTIME, uid: 0, gid: 0, uname: "", gname: "" }).encode();
  return Buffer.concat([pax, block]);
}

/** A switch of the gzip level for the data that follows (a file that does not compress is stored). */
interface LevelSwitch {
  level: number;
}

/** The archive's next top-level folder (or the files after one) starts here. */
interface SegmentStart {
  segment: string;
}

async function* tarStream(codec: TarCodec, files: TarFile[], level: number): AsyncGenerator<Buffer | LevelSwitch | SegmentStart> {
  const sorted = [...files].sort((a, b) => comparePaths(a.path, b.path));
  const emittedDirs = new Set<string>();
  let segment: string | undefined;
  for (const file of sorted) {
    const parts = file.path.split("/");
    // each top-level folder is a segment, and so is each run of top-level files between them
    const top = parts.length > 1 ? parts[0]! : "";
    if (top !== segment) yield { segment: (segment = top) };
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join("/");
      if (emittedDirs.has(dir)) continue;
      emittedDirs.add(dir);
      yield headerBlocks(codec, `${dir}/`, "Directory", 0);
    }
    yield headerBlocks(codec, file.path, "File", file.size);
    let read = 0;
    const small = file.size > 0 && file.size <= READ_CHUNK;
    // one synchronous read for a small file: a stream's set-up costs more than the read, and the
    // promise API's open, stat, read and close, one after another for each of the thousands of
    // files of a dependency tree, left the cores idle for most of a pack (runpod's 6,220: 5.8 → 3.1 s)
    const bytes = small ? readFileSync(file.source) : undefined;
    const stored = file.size >= SAMPLE_MIN_BYTES && !(await compresses(file, bytes));
    if (stored) yield { level: 0 };
    if (bytes) {
      read = bytes.length;
      if (read === file.size) yield bytes;
    } else if (file.size > 0) {
      for await (const chunk of createReadStream(file.source, { start: 0, end: file.size - 1, highWaterMark: READ_CHUNK }) as AsyncIterable<Buffer>) {
        read += chunk.length;
        yield chunk;
      }
    }
    if (stored) yield { level };
    if (read !== file.size) throw errors.ARTIFACT_SOURCE_CHANGED(file.source, read, file.size);
    const padding = (BLOCK - (file.size % BLOCK)) % BLOCK;
    if (padding) yield Buffer.alloc(padding);
  }
  yield Buffer.alloc(BLOCK * 2);
}

/**
 * The artifact's gzip level (docs/contracts.md, "Artifact"). Measured on the image-to-video example's
 * 106 MB of PyAV (CPU time of zlib alone): level 6 30 MB/s → 36.4 MB, 5 38 MB/s → 36.6 MB, 4 48 MB/s
 * → 37.3 MB, 3 60 MB/s → 38.2 MB; on 24 MB of TypeScript's lib (text) 4 is 6 % bigger than 6 and 3
 * 16 %. Level 4 with the chunks on every core packs about 3× as fast as level 6 on one did, for 2.6 %
 * more bytes on PyAV (bench/build, "pack").
 */
export const GZIP_LEVEL = 4;

/** Files from this size on are sampled: below it, deflating costs little whatever the data. */
const SAMPLE_MIN_BYTES = 256 * 1024;
const SAMPLE_SLICE = 64 * 1024;
/** A sample that level 1 cannot shrink below this share is stored (random data, archives, media, compressed weights). */
const STORE_ABOVE_RATIO = 0.95;

/**
 * Does the file compress? Three slices (start, middle, end) deflated at level 1. The answer depends on
 * the file's bytes only, so equal inputs still give equal artifacts (docs/contracts.md, "Artifact").
 */
async function compresses(file: TarFile, bytes: Buffer | undefined): Promise<boolean> {
  const offsets = [0, Math.floor(file.size / 2) - SAMPLE_SLICE / 2, file.size - SAMPLE_SLICE].map((o) => Math.max(0, o));
  let sample: Buffer;
  if (bytes) sample = Buffer.concat(offsets.map((o) => bytes.subarray(o, o + SAMPLE_SLICE)));
  else {
    const handle = await open(file.source, "r");
    try {
      const slices = await Promise.all(
        offsets.map(async (o) => {
          const slice = Buffer.alloc(SAMPLE_SLICE);
          const { bytesRead } = await handle.read(slice, 0, SAMPLE_SLICE, o);
          return slice.subarray(0, bytesRead);
        }),
      );
      sample = Buffer.concat(slices);
    } finally {
      await handle.close();
    }
  }
  return deflateRawSync(sample, { level: 1 }).length < sample.length * STORE_ABOVE_RATIO;
}

/** RFC 1952 header: deflate, no name, mtime 0, no extra flags, OS 3 (Unix), as Node's gzip writes it. */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
/** A final, empty stored block: closes the deflate data after the last segment. */
const FINAL_BLOCK = Buffer.from([0x01, 0x00, 0x00, 0xff, 0xff]);
const STORED_BLOCK_MAX = 0xffff;

/** Data as non-final stored deflate blocks (RFC 1951 3.2.4); each starts on a byte boundary, where a sync flush leaves the stream. */
function storedBlocks(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; at < data.length; at += STORED_BLOCK_MAX) {
    const slice = data.subarray(at, at + STORED_BLOCK_MAX);
    const len = slice.length;
    parts.push(Buffer.from([0x00, len & 0xff, len >> 8, ~len & 0xff, (~len >> 8) & 0xff]), slice);
  }
  return Buffer.concat(parts);
}

/** Compressible data is deflated in chunks of this many bytes, each on a thread of libuv's pool. */
export const CHUNK_BYTES = 1 << 20;
/** deflate's window: each chunk starts from the 32 KB before it (a preset dictionary), so splitting costs almost no size. */
const WINDOW = 32 * 1024;
/** Chunks being deflated at once: every core busy, and one more queued behind them. */
const IN_FLIGHT = Math.max(2, availableParallelism() + 1);

/**
 * A tar of at most this many bytes (a dev app's sources and runtime) is deflated on this thread and
 * written in one call: the thread pool's and the write stream's round trips were half of its pack
 * (49 files, ~150 KB: 13 ms, of which ~6.6 waiting).
 */
const SMALL_TAR_BYTES = 1 << 20;

/** One chunk deflated (primed with the bytes before it) and ended on a byte boundary with a sync flush: no final block. */
function deflateChunk(chunk: Buffer, dictionary: Buffer | undefined, level: number, here: boolean): Promise<Buffer> {
  const options = { level, dictionary, finishFlush: zlibConstants.Z_SYNC_FLUSH };
  if (here) return Promise.resolve(deflateRawSync(chunk, options));
  return new Promise((resolve, reject) => deflateRaw(chunk, options, (error, out) => (error ? reject(error) : resolve(out))));
}

/**
 * Chunks deflated before (./_deflate-cache.ts), for the top-level folders named in `segments` (the
 * dependencies, the svc runtime), each kept on disk in the folder it maps to, or in `cache`'s memory
 * where that is undefined. Only those folders' chunks are keyed: hashing and keeping every chunk of
 * an app's own files, which change from build to build, made bench/build's cold pack of 256 MB of
 * sources take 6.6-7.4 s, against 3.4-4.0 s without.
 */
export interface ChunkReuse {
  cache: DeflateCache;
  segments: ReadonlyMap<string, string | undefined>;
}

export interface WriteTarGzOptions {
  level?: number;
  onBytes?: (bytes: number) => void;
  reuse?: ChunkReuse;
}

/**
 * Writes `files` (plus their parent folders) as a gzip-compressed tar to `out`, hashing the
 * compressed bytes on the way. One gzip member, a plain .tar.gz, compressed on every core: the
 * tar's compressible bytes are cut into CHUNK_BYTES chunks, each deflated on its own thread with the
 * 32 KB before it as a preset dictionary and ended on a byte boundary (a sync flush), so the pieces
 * concatenate into one deflate stream any inflater reads (what pigz does); the data of a file that
 * does not compress goes in stored blocks written here, at the speed of reading it. Each top-level
 * folder starts afresh (a chunk boundary, no dictionary), so its chunks do not depend on what comes
 * before it: an edited source leaves the dependencies' chunks as they were, and `reuse` serves them
 * without deflating. The CRC-32 and size trailer cover the whole tar. Equal inputs give equal bytes:
 * where the chunks start depends on the input only (docs/contracts.md, "Artifact").
 */
export async function writeTarGz(files: TarFile[], out: string, { level = GZIP_LEVEL, onBytes, reuse }: WriteTarGzOptions = {}): Promise<TarResult> {
  const hash = createHash("sha256");
  let size = 0;
  const small = files.reduce((total, f) => total + f.size, 0) <= SMALL_TAR_BYTES;
  const file = small ? undefined : createWriteStream(out);
  const held: Buffer[] = [];
  const failed = new Promise<never>((_, reject) => file?.once("error", reject));
  failed.catch(() => undefined);
  const emit = async (chunk: Buffer) => {
    hash.update(chunk);
    size += chunk.length;
    if (!file) held.push(chunk);
    else if (!file.write(chunk)) await Promise.race([once(file, "drain"), failed]);
  };

  let crc = 0;
  let isize = 0;
  /** Output in archive order, some still being deflated. */
  const queue: Array<Promise<Buffer>> = [];
  const push = async (piece: Promise<Buffer>) => {
    piece.catch(() => undefined); // awaited in turn below; a failure surfaces there
    queue.push(piece);
    while (queue.length >= IN_FLIGHT) await emit(await queue.shift()!);
  };
  /** The last WINDOW bytes of the tar so far: the next chunk's dictionary. */
  let window = Buffer.alloc(0);
  const advanceWindow = (data: Buffer) => {
    window = data.length >= WINDOW ? Buffer.from(data.subarray(data.length - WINDOW)) : Buffer.concat([window, data]).subarray(-WINDOW);
  };
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  /** Is the current segment one whose chunks are reused, and where are they kept (undefined: memory)? */
  let reusing: { dir: string | undefined } | undefined;
  const deflateReusing = async (chunk: Buffer, dictionary: Buffer | undefined): Promise<Buffer> => {
    const kept = reuse && reusing; // read now: the next segment may start while this chunk deflates
    if (!reuse || !kept) return deflateChunk(chunk, dictionary, level, small);
    const key = DeflateCache.key(chunk, dictionary, level);
    const found = await reuse.cache.get(key, kept.dir);
    if (found) return found;
    const deflated = await deflateChunk(chunk, dictionary, level, small);
    await reuse.cache.set(key, deflated, kept.dir);
    return deflated;
  };
  const deflatePending = async () => {
    if (pendingBytes === 0) return;
    const chunk = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    const dictionary = window.length ? window : undefined;
    advanceWindow(chunk);
    await push(deflateReusing(chunk, dictionary));
  };
  /** Adds compressible bytes, deflating each full chunk. */
  const addCompressible = async (data: Buffer) => {
    for (let at = 0; at < data.length; ) {
      const take = Math.min(CHUNK_BYTES - pendingBytes, data.length - at);
      pending.push(data.subarray(at, at + take));
      pendingBytes += take;
      at += take;
      if (pendingBytes === CHUNK_BYTES) await deflatePending();
    }
  };
  let stored = false;
  try {
    await emit(GZIP_HEADER);
    for await (const piece of tarStream(await import("tar"), files, level)) {
      if (!Buffer.isBuffer(piece) && "segment" in piece) {
        await deflatePending();
        window = Buffer.alloc(0);
        reusing = reuse?.segments.has(piece.segment) ? { dir: reuse.segments.get(piece.segment) } : undefined;
        continue;
      }
      if (!Buffer.isBuffer(piece)) {
        stored = piece.level === 0;
        if (stored) await deflatePending();
        continue;
      }
      crc = crc32(piece, crc);
      isize = (isize + piece.length) % 2 ** 32;
      onBytes?.(piece.length);
      if (stored) {
        advanceWindow(piece);
        await push(Promise.resolve(storedBlocks(piece)));
      } else await addCompressible(piece);
    }
    await deflatePending();
    for (const piece of queue.splice(0)) await emit(await piece);
    const trailer = Buffer.alloc(8);
    trailer.writeUInt32LE(crc >>> 0, 0);
    trailer.writeUInt32LE(isize, 4);
    await emit(Buffer.concat([FINAL_BLOCK, trailer]));
    if (!file) writeFileSync(out, Buffer.concat(held));
    else {
      file.end();
      await Promise.race([once(file, "finish"), failed]);
    }
  } catch (error) {
    file?.destroy();
    throw error;
  }
  return { sha256: hash.digest("hex"), size };
}
