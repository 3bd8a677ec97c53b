/**
 * Deflated chunks of earlier artifacts, by what they were deflated from (private to svc:tar-pack).
 * Deflating is most of a pack, and most of an artifact is the same from one build to the next: the
 * dependencies and the runtime, each a segment of its own in the archive (./_tar.ts), so their chunks
 * come out byte for byte as before. A chunk's key is the SHA-256 of zlib's version, the level, the
 * 32 KB dictionary and the chunk: the same key gives the same deflated bytes, so a reused chunk
 * leaves the artifact exactly as deflating it again would (docs/contracts.md, "Artifact").
 *
 * Where the chunks are kept: for content-addressed dependencies, a folder in svc's cache beside them
 * (the next `svc build`, `svc deploy` or dev-server reload of any app with the same requirements; the
 * page cache keeps what is read often); for others, this process's memory (bounded, least recently
 * used out first), so that a one-shot build's memory does not grow with its dependencies. A file on
 * disk carries the SHA-256 of its bytes, checked on every read: a damaged file is a miss, never a
 * damaged artifact.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { versions } from "node:process";

/** What the memory tier holds at most (deflated bytes). */
const MEMORY_BYTES = 128 << 20;
const DIGEST_BYTES = 32;

export class DeflateCache {
  private readonly memory = new Map<string, Buffer>();
  private memoryBytes = 0;
  /** Chunks served without deflating, since this cache was made (tests and the pack's debug line). */
  hits = 0;

  constructor(private readonly maxMemoryBytes = MEMORY_BYTES) {}

  /** The key of `chunk` deflated at `level` primed with `dictionary`. */
  static key(chunk: Buffer, dictionary: Buffer | undefined, level: number): string {
    const hash = createHash("sha256").update(`zlib ${versions.zlib} level ${level} dictionary ${dictionary?.length ?? 0}\0`);
    if (dictionary) hash.update(dictionary);
    return hash.update(chunk).digest("hex");
  }

  /** The deflated bytes under `key`: from `dir` when given, else from memory. */
  async get(key: string, dir: string | undefined): Promise<Buffer | undefined> {
    const found = dir ? await this.read(join(dir, key)) : this.recall(key);
    if (found) this.hits++;
    return found;
  }

  /** Keeps `deflated` on disk in `dir` (written whole, then renamed into place), else in memory. */
  async set(key: string, deflated: Buffer, dir: string | undefined): Promise<void> {
    if (!dir) return this.remember(key, deflated);
    const temporary = join(dir, `.tmp-${process.pid}-${randomBytes(6).toString("hex")}`);
    try {
      await mkdir(dir, { recursive: true });
      await writeFile(temporary, Buffer.concat([createHash("sha256").update(deflated).digest(), deflated]));
      await rename(temporary, join(dir, key));
    } catch {
      await rm(temporary, { force: true }); // a cache: a chunk not written is deflated again next time
    }
  }

  private async read(file: string): Promise<Buffer | undefined> {
    const bytes = await readFile(file).catch(() => undefined);
    if (!bytes || bytes.length < DIGEST_BYTES) return undefined;
    const deflated = bytes.subarray(DIGEST_BYTES);
    return createHash("sha256").update(deflated).digest().equals(bytes.subarray(0, DIGEST_BYTES)) ? deflated : undefined;
  }

  private recall(key: string): Buffer | undefined {
    const kept = this.memory.get(key);
    if (kept) {
      this.memory.delete(key); // most recently used last
      this.memory.set(key, kept);
    }
    return kept;
  }

  private remember(key: string, deflated: Buffer): void {
    if (deflated.length > this.maxMemoryBytes || this.memory.has(key)) return;
    this.memory.set(key, deflated);
    this.memoryBytes += deflated.length;
    for (const [oldest, bytes] of this.memory) {
      if (this.memoryBytes <= this.maxMemoryBytes) break;
      this.memory.delete(oldest);
      this.memoryBytes -= bytes.length;
    }
  }
}

/** The process's cache: every pack of this process shares it (the dev server packs on every reload). */
export const processDeflateCache = new DeflateCache();
