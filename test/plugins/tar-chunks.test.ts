/**
 * plugins/_tar.ts's writer on every core: compressible data cut into chunks deflated in parallel,
 * each primed with the 32 KB before it, concatenated into one gzip member that gzip, Python and the
 * platform's unpacker read back byte for byte, the same bytes on every run, and about the size of
 * one deflate stream over the whole tar. Each top-level folder starts afresh, so an edit elsewhere
 * leaves its chunks as they were: a second pack takes the dependencies' chunks from the deflate cache
 * (memory, or a folder) and writes the very bytes deflating would.
 */
import { randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deflateRawSync, gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { unpackArtifact } from "../../platform/artifacts/unpack.ts";
import { DeflateCache } from "../../plugins/_deflate-cache.ts";
import { CHUNK_BYTES, GZIP_LEVEL, writeTarGz, type TarFile } from "../../plugins/_tar.ts";

/** Python-looking text that repeats at long distances only: a chunk without its dictionary loses matches. */
function sourceLike(seed: number, bytes: number): Buffer {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) >>> 0);
  const words = ["value", "result", "items", "config", "request", "frame", "index", "count"];
  let text = "";
  while (text.length < bytes) text += `def ${words[next() % 8]}_${next() % 500}(x, y=${next() % 100}):\n    return x.${words[next() % 8]} + y\n\n`;
  return Buffer.from(text.slice(0, bytes));
}

describe("the artifact's gzip, deflated in chunks on every core", () => {
  it("reads back byte for byte everywhere, is the same on every run, and costs under 1 % over one deflate stream", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-chunks-"));
    const contents = new Map<string, Buffer>([
      ["a/big.py", sourceLike(1, Math.round(CHUNK_BYTES * 3.4))], // several chunks, not a whole number of them
      ["a/noise.bin", randomBytes(600_000)], // stored between two compressed runs
      ["b/small.py", Buffer.from("print('hi')\n")],
      ["b/more.py", sourceLike(2, Math.round(CHUNK_BYTES * 1.3))],
    ]);
    const files: TarFile[] = [];
    for (const [path, bytes] of contents) {
      mkdirSync(join(dir, "src", path, ".."), { recursive: true });
      writeFileSync(join(dir, "src", path), bytes);
      files.push({ path, source: join(dir, "src", path), size: bytes.length });
    }
    const first = await writeTarGz(files, join(dir, "one.tar.gz"));
    const second = await writeTarGz(files, join(dir, "two.tar.gz"));
    expect(second.sha256).toBe(first.sha256);
    expect(statSync(join(dir, "one.tar.gz")).size).toBe(first.size);

    const path = join(dir, "one.tar.gz");
    execFileSync("gzip", ["-t", path]);
    const unpacked = join(dir, "platform");
    await unpackArtifact(path, unpacked);
    for (const [name, bytes] of contents) expect(readFileSync(join(unpacked, name)).equals(bytes)).toBe(true);
    const python = "import sys, tarfile\nwith tarfile.open(sys.argv[1], 'r:gz') as t:\n    print(len(t.extractfile('a/big.py').read()))";
    expect(Number(execFileSync("python3", ["-c", python, path], { encoding: "utf8" }))).toBe(contents.get("a/big.py")!.length);

    // the same tar through one deflate stream at the same level (the noise stored, as the writer does)
    const tar = gunzipSync(readFileSync(path));
    const noise = contents.get("a/noise.bin")!;
    const at = tar.indexOf(noise);
    const oneStream =
      deflateRawSync(tar.subarray(0, at), { level: GZIP_LEVEL }).length +
      noise.length +
      deflateRawSync(tar.subarray(at + noise.length), { level: GZIP_LEVEL }).length;
    expect(first.size).toBeLessThan(oneStream * 1.01);
  });

  it("takes unchanged folders' chunks from the cache after an edit elsewhere, the artifact's bytes the same as deflating them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-chunks-"));
    const write = (path: string, bytes: Buffer): TarFile => {
      mkdirSync(join(dir, "src", path, ".."), { recursive: true });
      writeFileSync(join(dir, "src", path), bytes);
      return { path, source: join(dir, "src", path), size: bytes.length };
    };
    const deps = [
      write("site-packages/lib/a.py", sourceLike(3, Math.round(CHUNK_BYTES * 2.5))),
      write("site-packages/lib/b.py", sourceLike(4, 70_000)),
      write("svc/worker.py", sourceLike(5, 40_000)), // the runtime: its chunk kept in memory only
      write("web/page.html", sourceLike(6, 30_000)), // a folder of the app's after them: not kept
    ];
    const app = (edit: string): TarFile => {
      const source = join(dir, `app-${edit.length}`, "handler.py"); // a source of its own for each version
      const bytes = Buffer.from(`GREETING = "${edit}"\n`);
      mkdirSync(join(source, ".."), { recursive: true });
      writeFileSync(source, bytes);
      return { path: "handler.py", source, size: bytes.length };
    };
    const chunksDir = join(dir, "deflated");
    const pack = (name: string, files: TarFile[], reuse?: { cache: DeflateCache; dir?: string }) =>
      writeTarGz(
        [...files, ...deps],
        join(dir, name),
        reuse
          ? {
              reuse: {
                cache: reuse.cache,
                segments: new Map([
                  ["site-packages", reuse.dir],
                  ["svc", undefined],
                ]),
              },
            }
          : {},
      );
    const depsChunks = 3; // 2.5 MB of site-packages/ from its own start: three chunks, the last one short
    const edited = [app("version two, a longer line")]; // every byte after it moves in the tar
    const fresh = await pack("v2-fresh.tar.gz", edited);

    // in memory (dependencies not content-addressed): the second pack deflates only the app's files
    const memory = new DeflateCache();
    await pack("v1-memory.tar.gz", [app("v1")], { cache: memory });
    expect(memory.hits).toBe(0);
    const fromMemory = await pack("v2-memory.tar.gz", edited, { cache: memory });
    expect(memory.hits).toBe(depsChunks + 1);
    expect(fromMemory.sha256).toBe(fresh.sha256);

    // on disk: only the dependencies' chunks (the runtime's stay in memory), read back by another process's cache, one of them damaged (a miss, deflated again)
    await pack("v1-disk.tar.gz", [app("v1")], { cache: new DeflateCache(), dir: chunksDir });
    const kept = readdirSync(chunksDir).filter((name) => !name.startsWith("."));
    expect(kept).toHaveLength(depsChunks);
    writeFileSync(join(chunksDir, kept[0]!), Buffer.concat([readFileSync(join(chunksDir, kept[0]!)).subarray(0, 40), Buffer.from("junk")]));
    const other = new DeflateCache();
    const fromDisk = await pack("v2-disk.tar.gz", edited, { cache: other, dir: chunksDir });
    expect(other.hits).toBe(depsChunks - 1);
    expect(fromDisk.sha256).toBe(fresh.sha256);
    const unpacked = join(dir, "platform");
    await unpackArtifact(join(dir, "v2-disk.tar.gz"), unpacked);
    expect(readFileSync(join(unpacked, "site-packages/lib/a.py")).equals(readFileSync(deps[0]!.source))).toBe(true);
    expect(readFileSync(join(unpacked, "handler.py"), "utf8")).toContain("version two");
  });
});
