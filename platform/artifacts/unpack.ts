/**
 * Safe artifact unpacking. Every entry is checked by us (not left to tar's defaults): no absolute
 * paths, no `..`, no device files or FIFOs, no links leaving the folder, nothing written through a
 * link, and the limits on entries and unpacked bytes, counted while the artifact streams (bounded
 * memory, decompression off the main thread: a gzip bomb is refused without being expanded; an
 * artifact under 1 MB is inflated at once, up to 16 MB, else it streams too).
 * Checked once when the artifact is uploaded and again while extracting; symlinks are verified
 * with realpath after extraction. A build unpacks once, into a temporary folder renamed into place.
 * What svc's own pack writes is read by ./_own-tar.ts and written here; anything else by node-tar.
 */
import { list, extract, type Parser } from "tar";
import {
  closeSync,
  createReadStream,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { rm } from "node:fs/promises";
import { dirname, join, posix, sep } from "node:path";
import { once } from "node:events";
import { pipeline } from "node:stream";
import { createGunzip, gunzipSync } from "node:zlib";
import { errors, isSvcError, SvcError } from "../../core/errors.ts";
import { formatBytes } from "../../core/format-bytes.ts";
import { DEFAULT_MAX_ARTIFACT_BYTES } from "../../core/config.ts";
import { sharedAttempt } from "../_shared-attempt.ts";
import { OwnTarReader, type OwnTarEntry, type OwnTarSink } from "./_own-tar.ts";

const FILE_TYPES = new Set(["File", "OldFile", "ContiguousFile"]);

interface CheckState {
  links: Set<string>;
}

function normalizeEntryPath(raw: string): string {
  let p = raw;
  while (p.startsWith("./")) p = p.slice(2);
  return p.replace(/\/+$/, "");
}

function unsafePathReason(raw: string): string | undefined {
  if (raw.includes("\0")) return "NUL byte in the path";
  if (raw.startsWith("/") || /^[a-zA-Z]:/.test(raw) || raw.startsWith("\\")) return "absolute path";
  if (raw.split(/[\\/]+/).includes("..")) return "'..' in the path";
  return undefined;
}

/** Whether some ancestor folder of `path` is a link entry seen earlier (writing through a link). */
function throughLink(path: string, state: CheckState): boolean {
  for (let at = path.indexOf("/"); at > 0; at = path.indexOf("/", at + 1)) {
    if (state.links.has(path.slice(0, at))) return true;
  }
  return false;
}

/** Throws ARTIFACT_UNSAFE when the entry may not be unpacked. */
export function checkEntry(raw: string, type: string, linkpath: string | undefined, state: CheckState): void {
  const pathWhy = unsafePathReason(raw);
  if (pathWhy) throw errors.ARTIFACT_UNSAFE(raw, pathWhy);
  const path = normalizeEntryPath(raw);
  if (throughLink(path, state) || state.links.has(path)) throw errors.ARTIFACT_UNSAFE(raw, "it goes through or replaces a link");
  if (FILE_TYPES.has(type) || type === "Directory") return;
  if (type === "SymbolicLink") {
    const target = linkpath ?? "";
    if (!target) throw errors.ARTIFACT_UNSAFE(raw, "empty link target");
    if (target.startsWith("/") || /^[a-zA-Z]:/.test(target)) throw errors.ARTIFACT_UNSAFE(raw, `link to absolute path ${target}`);
    // Resolve step by step (not normalized first): `x/l/..` must not pass through the link x/l.
    const stack: string[] = [];
    const parts = [...posix.dirname(path).split("/"), ...target.split("/")];
    parts.forEach((part, i) => {
      if (part === "" || part === ".") return;
      if (part === "..") {
        if (stack.length === 0) throw errors.ARTIFACT_UNSAFE(raw, `link to ${target} escapes the folder`);
        stack.pop();
        return;
      }
      stack.push(part);
      if (i < parts.length - 1 && state.links.has(stack.join("/"))) throw errors.ARTIFACT_UNSAFE(raw, `link to ${target} goes through another link`);
    });
    state.links.add(path);
    return;
  }
  if (type === "Link") {
    const target = linkpath ?? "";
    const why = unsafePathReason(target);
    if (!target || why) throw errors.ARTIFACT_UNSAFE(raw, `hard link to ${target || "nothing"}${why ? `: ${why}` : ""}`);
    if (throughLink(`${normalizeEntryPath(target)}/`, state)) throw errors.ARTIFACT_UNSAFE(raw, `hard link to ${target} goes through a link`);
    return;
  }
  throw errors.ARTIFACT_UNSAFE(raw, `${type} entries are not allowed`);
}

/**
 * Limits of what an artifact may unpack to (docs/platform.md, "Limits"): the build's own rule
 * (1.5 GB unpacked, spec 8) and a count of entries.
 */
export interface UnpackLimits {
  maxBytes: number;
  maxEntries: number;
}

export const UNPACK_LIMITS: UnpackLimits = { maxBytes: DEFAULT_MAX_ARTIFACT_BYTES, maxEntries: 200_000 };

/** Tar stream bytes allowed beyond the entries' contents: headers, padding, long names. */
const STREAM_SLACK_BYTES = 1 << 20;
const STREAM_BYTES_PER_ENTRY = 4096;

/** Counts entries and bytes as the tar streams by, and checks each entry; throws ARTIFACT_LIMIT naming the entry that broke a limit. */
class Tally {
  entries = 0;
  bytes = 0;
  last = "";
  private streamed = 0;
  private readonly state: CheckState = { links: new Set() };

  constructor(private readonly limits: UnpackLimits) {}

  /** One entry counted against the limits, then checked (checkEntry): what every reader's filter does. */
  check(path: string, type: string, size: number, linkpath?: string): void {
    this.entry(path, size);
    checkEntry(path, type, linkpath, this.state);
  }

  private entry(path: string, size: number): void {
    this.last = path;
    if (++this.entries > this.limits.maxEntries)
      throw errors.ARTIFACT_LIMIT(path, `the artifact has more than ${this.limits.maxEntries} entries, the platform's limit`);
    this.bytes += size;
    if (this.bytes > this.limits.maxBytes)
      throw errors.ARTIFACT_LIMIT(path, `the artifact unpacks to more than ${formatBytes(this.limits.maxBytes)}, the platform's limit`);
  }

  /** `bytes` more of tar stream decompressed (catches data that is no entry, e.g. zeros after the end). */
  stream(bytes: number): void {
    const total = (this.streamed += bytes);
    if (total <= this.limits.maxBytes + STREAM_SLACK_BYTES && total <= this.bytes + STREAM_SLACK_BYTES + this.entries * STREAM_BYTES_PER_ENTRY) return;
    throw errors.ARTIFACT_LIMIT(
      this.last || "(first entry)",
      `the artifact's tar stream holds ${formatBytes(total)}, more than its entries' ${formatBytes(this.bytes)}`,
    );
  }
}

/**
 * An artifact this small (a dev reload's, an app without dependencies) is read and inflated in one
 * go, unless it inflates past SMALL_INFLATED_BYTES (then it streams, bounded as any other): its
 * whole unpack runs without giving the event loop up, instead of ~20 turns of it, each behind
 * whatever else the platform's process does (a dev reload's provisioning waited ~50 ms on them).
 */
const SMALL_ARTIFACT_BYTES = 1 << 20;
const SMALL_INFLATED_BYTES = 16 << 20;
const SLICE_BYTES = 64 * 1024;

/** The whole tar of a small artifact; undefined for any other. */
function inflatedSmall(file: string): Buffer | undefined {
  if (statSync(file).size > SMALL_ARTIFACT_BYTES) return undefined;
  try {
    return gunzipSync(readFileSync(file), { maxOutputLength: SMALL_INFLATED_BYTES });
  } catch {
    return undefined; // too big inflated, or not gzip: the stream says which, within the limits
  }
}

/** A small artifact's whole tar in slices, as the stream would give them. */
function slicesOf(tar: Buffer): Buffer[] {
  const slices: Buffer[] = [];
  for (let at = 0; at < tar.length; at += SLICE_BYTES) slices.push(tar.subarray(at, at + SLICE_BYTES));
  return slices;
}

/** The artifact's tar as it inflates, off the main thread, in slices of SLICE_BYTES. */
const inflating = (file: string) => pipeline(createReadStream(file), createGunzip({ chunkSize: SLICE_BYTES }), () => {});

const unreadable = (error: unknown) => errors.ARTIFACT_UNSAFE("(the artifact)", `not a readable .tar.gz (${(error as Error)?.message ?? error})`);

/**
 * Streams the artifact through node:zlib (off the main thread) into a tar parser, in bounded
 * memory: reading stops at the archive's end, at the first failure, or when a limit is broken.
 * `finished` is the parser's last event; `whole` is the tar when the artifact is small (inflatedSmall).
 */
async function streamTar(
  file: string,
  whole: Buffer | undefined,
  parser: Parser,
  tally: Tally,
  failed: () => unknown,
  finished: "end" | "close",
): Promise<void> {
  let parserError: unknown;
  let archiveEnded = false;
  const settled = new Promise<void>((resolve) => {
    parser.once(finished, () => resolve());
    parser.once("error", (error: unknown) => {
      parserError ??= error;
      resolve();
    });
  });
  parser.on("eof", () => (archiveEnded = true));
  const tar = whole ? undefined : inflating(file);
  try {
    for await (const chunk of whole ? slicesOf(whole) : (tar as AsyncIterable<Buffer>)) {
      tally.stream(chunk.length);
      // events.once removes both listeners when either fires (a bare .once("error") per drain piled up)
      if (!parser.write(chunk) && !failed() && parserError === undefined) await once(parser, "drain").catch(() => undefined);
      if (failed() || parserError !== undefined || archiveEnded) break;
    }
  } catch (error) {
    tar?.destroy();
    parser.end();
    await settled;
    throw isSvcError(error) ? error : unreadable(error);
  }
  tar?.destroy(); // after the archive's end nothing more is read
  parser.end();
  await settled;
  const failure = failed();
  if (failure) throw failure;
  if (parserError !== undefined) throw unreadable(parserError);
}

/**
 * Feeds the tar to svc's own reader (./_own-tar.ts), each chunk counted first as streamTar counts
 * them; a small artifact's whole tar in one turn of the event loop. False when the reader declined
 * the tar (not svc's own kinds of entry) or it ended without its end marker: node-tar reads it then.
 */
async function readOwnTar(file: string, whole: Buffer | undefined, sink: OwnTarSink, tally: Tally): Promise<boolean> {
  const reader = new OwnTarReader(sink);
  const push = (chunk: Buffer) => {
    tally.stream(chunk.length);
    return reader.push(chunk);
  };
  if (whole) {
    for (const chunk of slicesOf(whole)) {
      const status = push(chunk);
      if (status !== "more") return status === "end";
    }
    return false;
  }
  const tar = inflating(file);
  let writing = false; // the sink's own failures (a file system error) are not the gzip's
  try {
    for await (const chunk of tar as AsyncIterable<Buffer>) {
      writing = true;
      const status = push(chunk);
      writing = false;
      if (status !== "more") return status === "end";
    }
    return false;
  } catch (error) {
    throw writing || isSvcError(error) ? error : unreadable(error);
  } finally {
    tar.destroy();
  }
}

/** Reads the whole artifact and throws on the first entry that may not be unpacked (ARTIFACT_UNSAFE, ARTIFACT_LIMIT). */
export async function checkArtifact(file: string, limits: UnpackLimits = UNPACK_LIMITS): Promise<{ entries: number; bytes: number }> {
  const whole = inflatedSmall(file);
  const own = new Tally(limits);
  const checker: OwnTarSink = { entry: ({ path, type, size }) => own.check(path, type, size), data() {}, end() {} };
  if (await readOwnTar(file, whole, checker, own)) return { entries: own.entries, bytes: own.bytes };
  const tally = new Tally(limits);
  let failure: SvcError | undefined;
  const parser = list({
    strict: true,
    onReadEntry(entry) {
      if (failure) return;
      try {
        tally.check(entry.path, entry.type, entry.size ?? 0, entry.linkpath);
      } catch (error) {
        failure = error as SvcError;
      }
    },
  }) as Parser;
  await streamTar(file, whole, parser, tally, () => failure, "end");
  return { entries: tally.entries, bytes: tally.bytes };
}

/** Synchronous, as tar writes the files: checks the folder it wrote in one go. */
function verifyLinks(root: string, dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isSymbolicLink()) {
      let real: string;
      try {
        real = realpathSync(full);
      } catch {
        continue; // dangling: its target was checked lexically
      }
      if (real !== root && !real.startsWith(root + sep)) throw errors.ARTIFACT_UNSAFE(full.slice(root.length + 1), "link leaves the folder");
    } else if (entry.isDirectory()) {
      verifyLinks(root, full);
    } else if (!entry.isFile()) {
      throw errors.ARTIFACT_UNSAFE(full.slice(root.length + 1), "not a regular file");
    }
  }
}

/**
 * A file of at most this many bytes is held in memory and compared with the base build's file of
 * the same path (unpackArtifact's `base`) before it is written: a larger one is written as it streams.
 */
const LINK_MAX_BYTES = 1 << 20;

/**
 * Writes the entries svc's own reader hands it under `root`, each counted and checked first: one
 * folder call per folder, an open, the writes and a close per file. No symlink is ever written, so
 * nothing goes through one. With a `base` (an earlier build of the same app, unpacked by this
 * writer: files and folders only), a file whose path, mode and bytes are those of the base's is a
 * hard link to it instead: one call instead of a new file's (a dev reload's build differs from the
 * one before it by a file or two; creating its ~50 files was 15-50 ms of the reload here).
 */
class CheckedWriter implements OwnTarSink {
  private readonly folders = new Set<string>();
  private fd: number | undefined;
  /** The current file, held to be compared with its base twin. */
  private held: { target: string; twin: string; mode: number; chunks: Buffer[] } | undefined;
  /** Files that are links to the base's. */
  linked = 0;

  constructor(
    private readonly root: string,
    readonly tally: Tally,
    private readonly base?: string,
  ) {}

  entry(entry: OwnTarEntry): void {
    this.tally.check(entry.path, entry.type, entry.size);
    const path = normalizeEntryPath(entry.path);
    if (entry.type === "Directory") {
      this.folder(path, entry.mode);
      return;
    }
    this.folder(posix.dirname(path));
    const target = join(this.root, path);
    const twin = this.base && entry.size <= LINK_MAX_BYTES ? join(this.base, path) : undefined;
    const twinStat = twin ? lstatSync(twin, { throwIfNoEntry: false }) : undefined;
    if (twin && twinStat?.isFile() && twinStat.size === entry.size && (twinStat.mode & 0o777) === entry.mode) {
      this.held = { target, twin, mode: entry.mode, chunks: [] };
      return;
    }
    this.fd = openSync(target, "w", entry.mode);
  }

  data(bytes: Buffer): void {
    if (this.held) this.held.chunks.push(bytes);
    else for (let at = 0; at < bytes.length; ) at += writeSync(this.fd!, bytes, at);
  }

  end(): void {
    if (this.held) this.endHeld(this.held);
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
  }

  private endHeld(held: NonNullable<CheckedWriter["held"]>): void {
    this.held = undefined;
    const bytes = held.chunks.length === 1 ? held.chunks[0]! : Buffer.concat(held.chunks);
    try {
      if (readFileSync(held.twin).equals(bytes)) {
        linkSync(held.twin, held.target);
        this.linked++;
        return;
      }
    } catch {
      // the base build went meanwhile (or cannot be linked to): the file is written
    }
    writeFileSync(held.target, bytes, { mode: held.mode });
  }

  private folder(path: string, mode?: number): void {
    if (this.folders.has(path)) return;
    mkdirSync(join(this.root, path), { recursive: true, mode });
    this.folders.add(path);
  }
}

/** How an unpack went: `plain` when svc's own reader wrote it (files and folders, no link), `linked` files taken from the base. */
export interface Unpacked {
  plain: boolean;
  linked: number;
}

/**
 * Extracts `file` into `dest` (which must not exist yet), checking every entry and the limits.
 * `base`: a plain unpacked build (Unpacked.plain) whose files equal to the new build's are linked,
 * not written again.
 */
export async function unpackArtifact(file: string, dest: string, limits: UnpackLimits = UNPACK_LIMITS, base?: string): Promise<Unpacked> {
  const tmp = `${dest}.tmp-${process.pid}-${Date.now()}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    const whole = inflatedSmall(file);
    const writer = new CheckedWriter(tmp, new Tally(limits), base);
    const plain = await readOwnTar(file, whole, writer, writer.tally).finally(() => writer.end());
    if (!plain) {
      // not svc's own kinds of entry: what the reader wrote goes, node-tar unpacks the artifact afresh
      await rm(tmp, { recursive: true, force: true });
      mkdirSync(tmp);
      await extractWithTar(file, whole, tmp, new Tally(limits));
    }
    const root = realpathSync(tmp);
    verifyLinks(root, root);
    if (existsSync(dest)) {
      await rm(tmp, { recursive: true, force: true }); // another unpack won: a whole build, perhaps large, not removed in one turn
      return { plain: false, linked: 0 };
    }
    mkdirSync(dirname(dest), { recursive: true });
    renameSync(tmp, dest);
    return { plain, linked: plain ? writer.linked : 0 };
  } catch (error) {
    await rm(tmp, { recursive: true, force: true }); // what a failed unpack wrote, up to the limit: not in one turn either
    if (error instanceof SvcError) throw error;
    // fs errors name paths under the platform's folder: show them relative to the artifact
    throw errors.ARTIFACT_UNSAFE(
      "(the artifact)",
      `could not unpack (${String((error as Error)?.message ?? error)
        .replaceAll(`${tmp}/`, "")
        .replaceAll(tmp, ".")})`,
    );
  }
}

/** Any artifact, through node-tar: each entry checked and counted in its filter; throws the first failure. */
async function extractWithTar(file: string, whole: Buffer | undefined, tmp: string, tally: Tally): Promise<void> {
  let failure: SvcError | undefined;
  // files written as their bytes arrive, synchronously: the async writer's open, write and close
  // round trips per file were most of a small build's unpack (a dev reload waits on it)
  const unpacker = extract({
    sync: true,
    cwd: tmp,
    strict: true,
    preservePaths: false,
    preserveOwner: false,
    noChmod: false,
    filter(path, entry) {
      if (failure) return false;
      const e = entry as { type?: string; linkpath?: string; size?: number };
      try {
        tally.check(path, e.type ?? "File", e.size ?? 0, e.linkpath);
        return true;
      } catch (error) {
        failure = error as SvcError;
        return false;
      }
    },
  }) as Parser;
  await streamTar(file, whole, unpacker, tally, () => failure, "close");
}

/**
 * Unpacks each build once: concurrent callers share one extraction. A build of an app unpacks
 * against the last plain build of that app unpacked here (unpackArtifact's `base`): its unchanged
 * files are links, never shared with another app's builds.
 */
export class BuildUnpacker {
  private readonly pending = new Map<string, Promise<string>>();
  /** Each app's last plain unpacked build folder (in this process). */
  private readonly lastOfApp = new Map<string, string>();

  constructor(private readonly buildsDir: string) {}

  dirOf(buildId: string): string {
    return join(this.buildsDir, buildId);
  }

  ensure(buildId: string, artifactFile: string, appId?: string): Promise<string> {
    const dest = this.dirOf(buildId);
    return sharedAttempt(this.pending, buildId, async () => {
      if (lstatSync(dest, { throwIfNoEntry: false })?.isDirectory()) return dest;
      const base = appId ? this.lastOfApp.get(appId) : undefined;
      const { plain } = await unpackArtifact(artifactFile, dest, UNPACK_LIMITS, base && existsSync(base) ? base : undefined);
      if (appId && plain) this.lastOfApp.set(appId, dest);
      return dest;
    });
  }
}
