/** svc:tar-pack, svc:size-guard, svc:analyze and plugin replacement, through the full build pipeline. */
import { createHash, randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { list } from "tar";
import { describe, expect, it } from "vitest";
import { runBuild as runPipeline } from "../../testing/index.ts";
import { createLogger } from "../../core/logger.ts";
import type { SvcPlugin } from "../../core/types.ts";
import { errors, isSvcError } from "../../core/errors.ts";
import { whatToLeaveOut } from "../../plugins/size-guard.ts";
import { PACK_STATE_FILE, SDK_DIR, walkFiles } from "../../plugins/tar-pack.ts";
import { FILE_INDEX_FILE } from "../../plugins/_file-index.ts";
import { ANALYSIS_CACHE_FILE, PYTHON_CACHE_FILE } from "../../plugins/_python/index.ts";
import { LISTING_CACHE_FILE } from "../../plugins/discover-python/_listing-cache.ts";
import { comparePaths } from "../../plugins/_tar.ts";
import { processDeflateCache } from "../../plugins/_deflate-cache.ts";
import { copyFixture } from "./_helpers.ts";

const quiet = () => createLogger("silent");

async function tarEntries(file: string) {
  const entries: Array<{ path: string; mode: number; uid: number; gid: number; mtime: string; type: string; size: number }> = [];
  await list({
    file,
    onReadEntry: (entry) => {
      entries.push({
        path: entry.path,
        mode: entry.mode ?? -1,
        uid: entry.uid ?? -1,
        gid: entry.gid ?? -1,
        mtime: entry.mtime?.toISOString() ?? "",
        type: entry.type,
        size: entry.size ?? 0,
      });
    },
  });
  return entries;
}

describe("svc:tar-pack", () => {
  it("packs sources, handlers, manifest, requirements.txt and the SDK per the contract layout", async () => {
    const root = copyFixture("pack-app");
    const ctx = await runPipeline({ root, logger: quiet(), options: { noDeps: true } });
    const artifact = ctx.artifact!;
    expect(artifact.path).toBe(join(root, ".svc", "artifact.tar.gz"));
    const paths = artifact.entries.map((e) => e.path);
    const sdk = (await walkFiles(SDK_DIR, (n) => n === "__pycache__" || n.endsWith(".pyc"))).map((f) => `svc/${f.rel}`).sort();
    expect(sdk.length).toBeGreaterThan(3);
    expect(paths.filter((p) => p.startsWith("svc/"))).toEqual(sdk);
    expect(paths.filter((p) => !p.startsWith("svc/"))).toMatchInlineSnapshot(`
      [
        "data/table.csv",
        "handlers/cpu_worker.py",
        "requirements.txt",
        "svc_manifest.json",
        "workers/__init__.py",
        "workers/cpu.py",
      ]
    `);
    // the archive holds the same files, plus their folders, with the contract's fixed metadata
    const entries = await tarEntries(artifact.path);
    expect(entries.filter((e) => e.type === "File").map((e) => e.path)).toEqual(paths);
    expect(entries.filter((e) => e.type === "Directory").map((e) => e.path)).toEqual(["data/", "handlers/", "svc/", "workers/"]);
    for (const entry of entries) {
      expect(entry).toMatchObject({ uid: 0, gid: 0, mtime: "2000-01-01T00:00:00.000Z", mode: entry.type === "Directory" ? 0o755 : 0o644 });
    }
    const bytes = readFileSync(artifact.path);
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(artifact.sha256);
    expect(bytes.length).toBe(artifact.size);
    // gzip header: no file name flag, mtime 0
    expect(bytes[3]).toBe(0);
    expect(bytes.readUInt32LE(4)).toBe(0);
    expect(artifact.unpackedSize).toBe(artifact.entries.reduce((sum, e) => sum + e.size, 0));
    // the build folder is gone after a successful build
    expect(existsSync(ctx.buildDir)).toBe(false);
  });

  it("keeps .svc/.build/ with --keep-build, and the artifact's whole tree in .svc/artifact/", async () => {
    const root = copyFixture("pack-app");
    const ctx = await runPipeline({ root, logger: quiet(), options: { noDeps: true, keepBuild: true } });
    expect(readdirSync(ctx.buildDir).sort()).toEqual(["handlers", "requirements.txt", "svc_manifest.json"]);
    expect(readFileSync(join(ctx.buildDir, "requirements.txt"), "utf8")).toContain("six==1.17.0");
    const tree = join(ctx.outDir, "artifact");
    const kept = (await walkFiles(tree)).map((f) => f.rel).sort();
    expect(kept).toEqual(ctx.artifact!.entries.map((e) => e.path).sort()); // exactly what was packed
    expect(kept).toContain("svc/__init__.py");
    expect(kept).toContain("workers/cpu.py");
    // the next build packs the same app, not the kept tree
    const again = await runPipeline({ root, logger: quiet(), options: { noDeps: true } });
    expect(again.artifact!.sha256).toBe(ctx.artifact!.sha256);
  });

  it("is deterministic: two copies of the same app (different mtimes) give the same sha256", async () => {
    const a = copyFixture("pack-app");
    const b = copyFixture("pack-app");
    utimesSync(join(b, "workers", "cpu.py"), new Date("2011-11-11"), new Date("2011-11-11"));
    const first = await runPipeline({ root: a, logger: quiet(), options: { noDeps: true } });
    const second = await runPipeline({ root: b, logger: quiet(), options: { noDeps: true } });
    expect(second.artifact!.sha256).toBe(first.artifact!.sha256);
    expect(statSync(first.artifact!.path).size).toBe(statSync(second.artifact!.path).size);
  });

  it("stores data that does not compress and deflates the rest, in one plain .tar.gz that gzip, tar and Python read back byte for byte, deterministically", async () => {
    const a = copyFixture("pack-app");
    const noise = randomBytes(3_000_000); // over the sampling threshold, and over one read chunk
    const text = Buffer.from("def f(x):\n    return x * 2\n".repeat(40_000)); // ~1 MB that compresses
    writeFileSync(join(a, "data", "noise.bin"), noise);
    writeFileSync(join(a, "data", "source_like.py"), text);
    const b = copyFixture("pack-app");
    writeFileSync(join(b, "data", "noise.bin"), noise);
    writeFileSync(join(b, "data", "source_like.py"), text);
    const first = await runPipeline({ root: a, logger: quiet(), options: { noDeps: true } });
    const second = await runPipeline({ root: b, logger: quiet(), options: { noDeps: true } });
    expect(second.artifact!.sha256).toBe(first.artifact!.sha256);
    // stored: the archive is the noise plus little; the text shrank to a few KB
    expect(first.artifact!.size).toBeGreaterThan(noise.length);
    expect(first.artifact!.size).toBeLessThan(noise.length + 200_000);
    const path = first.artifact!.path;
    // stored blocks of 65535 bytes hold the file verbatim (zlib's own deflate cuts random data into ~16 KB blocks)
    expect(readFileSync(path).indexOf(noise.subarray(0, 65_535))).toBeGreaterThan(0);
    const out = mkdtempSync(join(tmpdir(), "svc-unpack-"));
    execFileSync("gzip", ["-t", path]);
    execFileSync("tar", ["-xzf", path, "-C", out]);
    expect(readFileSync(join(out, "data", "noise.bin")).equals(noise)).toBe(true);
    expect(readFileSync(join(out, "data", "source_like.py")).equals(text)).toBe(true);
    const python =
      "import hashlib, sys, tarfile\nwith tarfile.open(sys.argv[1], 'r:gz') as t:\n    print(hashlib.sha256(t.extractfile('data/noise.bin').read()).hexdigest())";
    expect(execFileSync("python3", ["-c", python, path], { encoding: "utf8" }).trim()).toBe(createHash("sha256").update(noise).digest("hex"));
    rmSync(out, { recursive: true, force: true });
  });

  it("reuses the artifact when nothing changed and repacks after a source change", async () => {
    const root = copyFixture("pack-app");
    const first = await runPipeline({ root, logger: quiet(), options: { noDeps: true } });
    expect(first.meta.get("svc:tar-pack")).toMatchObject({ reused: false });
    const again = await runPipeline({ root, logger: quiet(), options: { noDeps: true } });
    expect(again.meta.get("svc:tar-pack")).toMatchObject({ reused: true });
    expect(again.artifact!.sha256).toBe(first.artifact!.sha256);
    writeFileSync(join(root, "data", "table.csv"), "a,b\n3,4\n");
    const hitsBefore = processDeflateCache.hits;
    const changed = await runPipeline({ root, logger: quiet(), options: { noDeps: true } });
    expect(changed.meta.get("svc:tar-pack")).toMatchObject({ reused: false });
    expect(changed.artifact!.sha256).not.toBe(first.artifact!.sha256);
    // the runtime's segment (svc/) is the same: its deflated chunk comes from this process's memory
    expect(processDeflateCache.hits - hitsBefore).toBe(1);
  });

  it("repacks when only a build-folder file changed, and when a source joins after the manifest stage", async () => {
    const root = copyFixture("pack-app");
    let extra = "first";
    let lateSource: string | undefined;
    const plugin: SvcPlugin = {
      name: "test:build-file",
      apply(pipeline) {
        pipeline.hooks.installDependencies.tapPromise("test:build-file", async (_requirements, ctx) => {
          writeFileSync(join(ctx.buildDir, "extra.txt"), extra);
          if (lateSource) ctx.sourceFiles = [...ctx.sourceFiles, lateSource];
        });
      },
    };
    const build = () => runPipeline({ root, logger: quiet(), plugins: [plugin], options: { noDeps: true } });
    const first = await build();
    expect((await build()).meta.get("svc:tar-pack")).toMatchObject({ reused: true });
    extra = "second";
    const rebuilt = await build();
    expect(rebuilt.meta.get("svc:tar-pack")).toMatchObject({ reused: false });
    expect(rebuilt.artifact!.sha256).not.toBe(first.artifact!.sha256);

    writeFileSync(join(root, "late.txt"), "not seen by the manifest");
    lateSource = "late.txt";
    const withLate = await build();
    expect(withLate.meta.get("svc:tar-pack")).toMatchObject({ reused: false });
    expect((await tarEntries(withLate.artifact!.path)).map((e) => e.path)).toContain("late.txt");
  });

  it("starts afresh from caches and a pack state that are not what it wrote, and builds the same artifact", async () => {
    const root = copyFixture("pack-app");
    const first = await runPipeline({ root, logger: quiet(), options: { noDeps: true } });
    const caches = [FILE_INDEX_FILE, LISTING_CACHE_FILE, ANALYSIS_CACHE_FILE, PYTHON_CACHE_FILE, PACK_STATE_FILE];
    const garbage = ["not json {", "null", "[]", '"text"', '{"version": 2}'];
    caches.forEach((file, i) => {
      // python.json is written only where python3 is a version manager's shim
      if (file !== PYTHON_CACHE_FILE) expect(existsSync(join(root, ".svc", file)), file).toBe(true);
      writeFileSync(join(root, ".svc", file), garbage[i]!);
    });
    const again = await runPipeline({ root, logger: quiet(), options: { noDeps: true } });
    expect(again.meta.get("svc:tar-pack")).toMatchObject({ reused: false });
    expect(again.artifact!.sha256).toBe(first.artifact!.sha256);
    const third = await runPipeline({ root, logger: quiet(), options: { noDeps: true } });
    expect(third.meta.get("svc:tar-pack")).toMatchObject({ reused: true });
  });

  it("warns about a source the SDK replaces on every build, the reused ones too", async () => {
    const root = copyFixture("pack-app");
    mkdirSync(join(root, "svc"), { recursive: true });
    writeFileSync(join(root, "svc", "__init__.py"), "# shadows the SDK\n");
    for (const reused of [false, true]) {
      const logger = createLogger("silent");
      const ctx = await runPipeline({ root, logger, options: { noDeps: true } });
      expect(ctx.meta.get("svc:tar-pack")).toMatchObject({ reused });
      expect(logger.warnings.join("\n")).toContain("svc/__init__.py: the svc SDK file replaces the app source file");
    }
  });
});

describe("archive order", () => {
  it("sorts paths segment by segment: a folder's files before a sibling that extends its name, children after parents", () => {
    const paths = ["ab", "a-b/x.py", "a/b/c.py", "a", "a/b.py", "a/b", "b", "a/bc.py", "a.py"];
    expect([...paths].sort(comparePaths)).toEqual(["a", "a/b", "a/b/c.py", "a/b.py", "a/bc.py", "a-b/x.py", "a.py", "ab", "b"]);
  });
});

describe("svc:size-guard", () => {
  it("refuses an artifact over the limit, listing the biggest entries and a remedy for what is big (app files here), and removes it", async () => {
    const root = copyFixture("pack-app");
    // well over the SDK (svc/, about 210 KB), so that it leads the list below
    writeFileSync(join(root, "data", "weights.bin"), Buffer.alloc(400_000, 7));
    writeFileSync(join(root, "svc.config.ts"), "export default { maxArtifactBytes: 50000 };\n");
    const error = await runPipeline({ root, logger: quiet(), options: { noDeps: true } }).catch((e: unknown) => e);
    expect(isSvcError(error)).toBe(true);
    const svcError = error as import("../../core/errors.ts").SvcError;
    expect(svcError.code).toBe("ARTIFACT_TOO_LARGE");
    // 400 KB of one repeated byte: the .tar.gz is small, the unpacked tree breaks the limit
    expect(svcError.message).toMatch(/^The artifact unpacks to \d{3}\.\d KB, over the 50\.0 KB deployment-size limit \(the \.tar\.gz itself is \d+\.\d KB\)/);
    // the refused artifact is not left behind
    expect(existsSync(join(root, ".svc", "artifact.tar.gz"))).toBe(false);
    // biggest first: data/ (the 400 KB file) leads the list
    expect(svcError.message).toMatch(/Biggest entries, unpacked:\n\s+entry\s+size\s+share\s+files\n\s+data\/\s+400\.0 KB/);
    expect(svcError.message).toContain("svc/");
    // data/ is the app's own: the remedy says .svcignore or a network volume, not --exclude
    expect(svcError.remedy).toBe(
      "Keep data/ out of the artifact with .svcignore and read such data from a network volume (mounted at /platform-volume) instead.",
    );
    // a failed build removes .svc/.build like a good one
    expect(existsSync(join(root, ".svc", ".build"))).toBe(false);
  });

  it("names the compressed size when the .tar.gz itself breaks the limit, and --keep-build keeps .svc/.build", async () => {
    const root = copyFixture("pack-app");
    writeFileSync(join(root, "data", "noise.bin"), randomBytes(100_000));
    // A packer that stores without compressing (gzip level 0): the file is a little bigger than its content.
    writeFileSync(
      join(root, "svc.config.ts"),
      `import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
export default {
  maxArtifactBytes: 100_000,
  plugins: [{
    name: "svc:tar-pack",
    apply(pipeline) {
      pipeline.hooks.pack.tapPromise("svc:tar-pack", async (_artifact, ctx) => {
        const data = readFileSync(ctx.root + "/data/noise.bin");
        const path = ctx.outDir + "/artifact.tar.gz";
        mkdirSync(ctx.outDir, { recursive: true });
        writeFileSync(path, gzipSync(data, { level: 0 }));
        return { path, sha256: "stored", size: statSync(path).size, unpackedSize: data.length, entries: [{ path: "data/noise.bin", size: data.length }] };
      });
    },
  }],
};
`,
    );
    const error = (await runPipeline({ root, logger: quiet(), options: { noDeps: true, keepBuild: true } }).catch(
      (e: unknown) => e,
    )) as import("../../core/errors.ts").SvcError;
    expect(error.code).toBe("ARTIFACT_TOO_LARGE");
    const size = Number(/\((\d+) bytes, limit 100000\)/.exec(error.message)?.[1]);
    expect(size).toBeGreaterThan(100_000);
    expect(error.message).toContain(
      `The artifact .svc/artifact.tar.gz is 100.0 KB (${size} bytes, limit 100000) compressed, over the 100.0 KB artifact-size limit (it unpacks to 100.0 KB)`,
    );
    expect(existsSync(join(root, ".svc", "artifact.tar.gz"))).toBe(false);
    expect(existsSync(join(root, ".svc", ".build", "svc_manifest.json"))).toBe(true);
  });

  it("names big packages for --exclude", () => {
    const groups = [
      { name: "site-packages/av", size: 600, files: 10 },
      { name: "site-packages/pillow", size: 300, files: 5 },
      { name: "svc/", size: 50, files: 9 },
      { name: "site-packages/six", size: 5, files: 1 },
    ];
    expect(whatToLeaveOut(groups, 955)).toEqual({ packages: ["av", "pillow"], appFiles: [] });
    expect(errors.ARTIFACT_TOO_LARGE("unpacked", { compressed: 1, unpacked: 955 }, 900, "", whatToLeaveOut(groups, 955)).remedy).toBe(
      "Leave out big packages with --exclude av,pillow (those pre-installed in every endpoint's image are excluded already).",
    );
  });

  it("lets an artifact under the limit pass", async () => {
    const root = copyFixture("pack-app");
    writeFileSync(join(root, "svc.config.ts"), "export default { maxArtifactBytes: 10_000_000 };\n");
    await expect(runPipeline({ root, logger: quiet(), options: { noDeps: true } })).resolves.toBeTruthy();
  });
});

describe("svc:analyze", () => {
  it("writes .svc/analyze.html (test/plugins/analyze.test.ts renders it) and prints the same summary and the top entries", async () => {
    const root = copyFixture("pack-app");
    const lines: string[] = [];
    await runPipeline({ root, logger: createLogger("info", (line) => lines.push(line)), options: { noDeps: true, analyze: true } });
    const html = readFileSync(join(root, ".svc", "analyze.html"), "utf8");
    expect(html).toContain("<!doctype html>");
    for (const group of ["app files", "svc runtime", "generated files"]) expect(html).toContain(`data-group="${group}"`);
    const table = lines.join("\n");
    // the page's header, printed: totals against the limit, the groups, the packages
    expect(table).toMatch(/artifact of pack-app: [\d.]+ KB compressed \([\d.]+ % of the 1\.5 GB limit\), [\d.]+ KB unpacked/);
    expect(table).toMatch(/groups: app files [\d.]+ K?B · svc runtime [\d.]+ KB · generated files [\d.]+ KB/);
    expect(table).toContain("packages: none installed");
    expect(table).toMatch(/entry\s+size\s+share\s+files/);
    expect(table).toMatch(/\n\s+svc\/\s+[\d.]+ KB\s+[\d.]+%\s+\d+/);
  });

  it("is off without --analyze and can be disabled by name", async () => {
    const root = copyFixture("pack-app");
    writeFileSync(join(root, "svc.config.ts"), 'export default { disablePlugins: ["svc:analyze"] };\n');
    await runPipeline({ root, logger: quiet(), options: { noDeps: true, analyze: true } });
    expect(existsSync(join(root, ".svc", "analyze.html"))).toBe(false);
    expect(existsSync(join(root, ".svc", "artifact.tar.gz"))).toBe(true);
  });
});

describe("replacing a built-in plugin", () => {
  it("a config plugin named svc:tar-pack replaces the packer", async () => {
    const root = copyFixture("pack-app");
    writeFileSync(
      join(root, "svc.config.ts"),
      `export default {
  plugins: [{
    name: "svc:tar-pack",
    apply(pipeline) {
      pipeline.hooks.pack.tapPromise("svc:tar-pack", async (_artifact, ctx) => ({
        path: ctx.outDir + "/custom.bin", sha256: "custom", size: 1, unpackedSize: 1, entries: [{ path: "x", size: 1 }],
      }));
    },
  }],
};
`,
    );
    const ctx = await runPipeline({ root, logger: quiet(), options: { noDeps: true } });
    expect(ctx.artifact!.sha256).toBe("custom");
    expect(existsSync(join(root, ".svc", "artifact.tar.gz"))).toBe(false);
  });
});
