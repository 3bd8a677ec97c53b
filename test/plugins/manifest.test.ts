import { createHash } from "node:crypto";
import { readFileSync, statSync, writeFileSync, mkdirSync, existsSync, mkdtempSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runBuild as runPipeline } from "../../testing/index.ts";
import { createLogger } from "../../core/logger.ts";
import { MANIFEST_FILE, manifestSchema } from "../../core/manifest.ts";
import type { SvcPlugin } from "../../core/types.ts";
import { handlerSource } from "../../plugins/python-handlers.ts";
import { ANALYSIS_CACHE_FILE, sharedParser, stdlibWithCache } from "../../plugins/_python/index.ts";
import { RACY_WINDOW_MS } from "../../core/file-stat.ts";
import { FileIndex } from "../../plugins/_file-index.ts";
import { writeIfChanged } from "../../plugins/_fs.ts";
import { buildUntilManifest, caught, copyFixture } from "./_front-half.ts";

const read = (file: string) => readFileSync(file, "utf8");

describe("svc:manifest and svc:python-handlers on multi-endpoint", () => {
  it("writes the manifest to .svc/ and the build folder", async () => {
    const root = copyFixture("multi-endpoint");
    const ctx = await buildUntilManifest(root);
    const written = read(join(root, ".svc", MANIFEST_FILE));
    expect(read(join(root, ".svc", ".build", MANIFEST_FILE))).toBe(written);
    expect(JSON.parse(written)).toEqual(ctx.manifest);
    expect(manifestSchema.safeParse(JSON.parse(written)).success).toBe(true);
    await expect(written).toMatchFileSnapshot("../../fixtures/multi-endpoint/expected/manifest.json");
  });

  it("writes one handler per endpoint, rewriting only changed ones and removing stale ones", async () => {
    const root = copyFixture("multi-endpoint");
    const ctx = await buildUntilManifest(root);
    const handlers = join(root, ".svc", ".build", "handlers");
    expect(ctx.endpoints.map((e) => [e.name, e.handler])).toEqual([
      ["streamer", "handlers/streamer.py"],
      ["cpu_worker", "handlers/cpu_worker.py"],
      ["gpu-worker", "handlers/gpu_worker.py"],
    ]);
    expect(read(join(handlers, "gpu_worker.py"))).toBe(handlerSource("gpu-worker"));
    expect(read(join(handlers, "gpu_worker.py"))).toContain('from svc.worker import serve\n\nserve("gpu-worker")\n');
    expect(handlerSource("cpu_worker")).toBe(read(join(handlers, "cpu_worker.py")));

    const old = new Date("2001-01-01T00:00:00Z");
    const { utimesSync } = await import("node:fs");
    for (const file of ["gpu_worker.py", "streamer.py"]) utimesSync(join(handlers, file), old, old);
    utimesSync(join(root, ".svc", MANIFEST_FILE), old, old);
    writeFileSync(join(handlers, "removed_endpoint.py"), "stale\n");
    writeFileSync(join(handlers, "streamer.py"), "edited by hand\n");
    utimesSync(join(handlers, "streamer.py"), old, old);

    await buildUntilManifest(root);
    expect(statSync(join(handlers, "gpu_worker.py")).mtime).toEqual(old);
    expect(statSync(join(root, ".svc", MANIFEST_FILE)).mtime).toEqual(old);
    expect(read(join(handlers, "streamer.py"))).toBe(handlerSource("streamer"));
    expect(existsSync(join(handlers, "removed_endpoint.py"))).toBe(false);
  });

  it("fingerprints the source files: a data file edit changes it, an ignored file does not", async () => {
    const root = copyFixture("multi-endpoint");
    const first = (await buildUntilManifest(root)).manifest!.fingerprint;
    writeFileSync(join(root, "scratch.py"), "# ignored by .gitignore\n");
    mkdirSync(join(root, "tests"), { recursive: true });
    writeFileSync(join(root, "tests", "test_more.py"), "X = 1\n");
    expect((await buildUntilManifest(root)).manifest!.fingerprint).toBe(first);
    writeFileSync(join(root, "data", "prompts.json"), '["a bird"]\n');
    expect((await buildUntilManifest(root)).manifest!.fingerprint).not.toBe(first);
  });

  it("lets a user plugin at the default stage change the manifest before it is validated and written", async () => {
    const root = copyFixture("multi-endpoint");
    const seen: unknown[] = [];
    const plugin: SvcPlugin = {
      name: "svc-plugin-test",
      apply(pipeline) {
        pipeline.hooks.manifest.tapPromise("svc-plugin-test", async (manifest) => {
          seen.push(manifest?.endpoints?.["gpu-worker"]?.image);
          manifest.endpoints["gpu-worker"]!.env.ADDED = "by plugin";
          return { ...manifest, team: "vision" };
        });
      },
    };
    await buildUntilManifest(root, { config: { images: { gpu: "my/gpu:1" } }, plugins: [plugin] });
    expect(seen).toEqual(["my/gpu:1"]);
    const written = JSON.parse(read(join(root, ".svc", MANIFEST_FILE)));
    expect(written.team).toBe("vision");
    expect(written.endpoints["gpu-worker"].env).toEqual({ MODEL: "tiny", ADDED: "by plugin" });
    expect(JSON.parse(read(join(root, ".svc", ".build", MANIFEST_FILE))).team).toBe("vision");
  });

  it("refuses to write a manifest a plugin broke", async () => {
    const root = copyFixture("multi-endpoint");
    const breaker: SvcPlugin = {
      name: "svc-plugin-breaker",
      apply(pipeline) {
        pipeline.hooks.manifest.tapPromise("svc-plugin-breaker", async (manifest) => ({ ...manifest, pythonVersion: "2.7" }));
      },
    };
    expect(await caught(() => buildUntilManifest(root, { plugins: [breaker] }))).toMatchObject({ code: "MANIFEST_INVALID" });
    expect(existsSync(join(root, ".svc", MANIFEST_FILE))).toBe(false);
  });
});

describe("svc:manifest on load-balanced", () => {
  it("records routes, the function registry and LB hardware", async () => {
    const root = copyFixture("load-balanced");
    const ctx = await buildUntilManifest(root, { config: { app: "lb-demo", pythonVersion: "3.12" } });
    const manifest = ctx.manifest!;
    expect(manifest).toMatchObject({ version: 1, app: "lb-demo", pythonVersion: "3.12" });
    expect(manifest.routes).toEqual({
      api: [
        { method: "GET", path: "/health", function: "health" },
        { method: "POST", path: "/generate", function: "generate" },
      ],
    });
    expect(manifest.functions).toEqual({ health: "api", generate: "api", summarise: "summariser" });
    expect(manifest.endpoints.api).toMatchObject({
      type: "LB",
      file: "app/api.py",
      module: "app.api",
      handler: "handlers/api.py",
      image: "svc/worker-cpu:py3.11-slim",
      scaling: { workersMin: 1, workersMax: 2, scalerType: "REQUEST_COUNT", scalerValue: 10 },
    });
    expect(manifest.endpoints.api!.functions[1]).toEqual({
      name: "generate",
      module: "app.api",
      line: 13,
      isAsync: true,
      isGenerator: false,
      httpMethod: "POST",
      httpPath: "/generate",
      params: [{ name: "text", kind: "positional_or_keyword", annotation: "str", required: true }],
      returns: "dict",
    });
    expect(manifest.endpoints.summariser).toMatchObject({
      hardware: { gpuIds: ["AMPERE_16"], gpuCount: 1 },
      image: "svc/worker-gpu:py3.11-torch",
      executionTimeoutMs: 30_500,
    });
    await expect(read(join(root, ".svc", MANIFEST_FILE))).toMatchFileSnapshot("../../fixtures/load-balanced/expected/manifest.json");
  });
});

describe("runPipeline with the built-in plugin list", () => {
  it("builds multi-endpoint up to the manifest stage", async () => {
    const root = copyFixture("multi-endpoint");
    const ctx = await runPipeline({ root, options: { until: "manifest" }, logger: createLogger("silent") });
    expect(Object.keys(ctx.manifest!.endpoints)).toEqual(["streamer", "cpu_worker", "gpu-worker"]);
    expect(ctx.manifest!.app).toBe("multi-endpoint");
    expect(ctx.logger.timings.map((t) => t.stage)).toEqual(["discover", "group", "generateHandlers", "manifest"]);
  });
});

describe("the file index behind the source fingerprint (docs/manifest.md, File index)", () => {
  const sha = (text: string) => createHash("sha256").update(text).digest("hex");
  const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

  it("changes the fingerprint when a file is edited to the same size and its mtime is set back", async () => {
    const root = copyFixture("multi-endpoint");
    const file = join(root, "data", "prompts.json");
    // whole seconds, as a file system with 1 s timestamps records them
    const second = Math.floor(Date.now() / 1000);
    utimesSync(file, second, second);
    const first = (await buildUntilManifest(root)).manifest!.fingerprint;
    const before = statSync(file);
    const text = read(file);
    writeFileSync(file, text.replace("cat", "cow"));
    utimesSync(file, second, second);
    expect(statSync(file).size).toBe(before.size);
    expect(statSync(file).mtimeMs).toBe(before.mtimeMs);
    const edited = (await buildUntilManifest(root)).manifest!.fingerprint;
    expect(edited).not.toBe(first);
    writeFileSync(file, text);
    expect((await buildUntilManifest(root)).manifest!.fingerprint).toBe(first);
  });

  it("does not read a file whose stat matches an entry hashed after the file last changed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-index-"));
    const file = join(dir, "a.txt");
    writeFileSync(file, "hello");
    await settle();
    const first = await FileIndex.open(join(dir, "index.json"), { racyWindowMs: 0 });
    expect(await first.digest(file)).toEqual({ size: 5, sha256: sha("hello") });
    expect(first.stats).toMatchObject({ hashedFiles: 1, reusedFiles: 0 });
    await first.save();
    const second = await FileIndex.open(join(dir, "index.json"), { racyWindowMs: 0 });
    expect(await second.digest(file)).toEqual({ size: 5, sha256: sha("hello") });
    expect(second.stats).toMatchObject({ hashedFiles: 0, reusedFiles: 1 });
  });

  it("hashes a racily clean entry again: same stat, but the file changed within the window of its hashing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-index-"));
    const file = join(dir, "a.txt");
    writeFileSync(file, "world");
    // an entry whose stat matches the file now, with the hash of older bytes of the same size:
    // what a same-size edit in the same timestamp tick as the hashing leaves behind
    const info = statSync(file, { bigint: true });
    const entry = (hashedAt: number) => [5, String(info.mtimeNs), String(info.ctimeNs), String(info.ino), sha("hello"), hashedAt];
    const changedMs = Number((info.mtimeNs > info.ctimeNs ? info.mtimeNs : info.ctimeNs) / 1_000_000n);
    const indexFile = join(dir, "index.json");

    writeFileSync(indexFile, JSON.stringify({ version: 1, entries: { [file]: entry(changedMs + 500) } }));
    const racy = await FileIndex.open(indexFile);
    expect((await racy.digest(file)).sha256).toBe(sha("world"));
    expect(racy.stats.hashedFiles).toBe(1);

    // the rule's other side: hashed well after the last change, a matching stat is trusted as is
    writeFileSync(indexFile, JSON.stringify({ version: 1, entries: { [file]: entry(changedMs + RACY_WINDOW_MS + 1000) } }));
    const clean = await FileIndex.open(indexFile);
    expect((await clean.digest(file)).sha256).toBe(sha("hello"));
    expect(clean.stats.hashedFiles).toBe(0);
  });

  it("leaves an unchanged generated file unread and unwritten when the index vouches for it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-index-"));
    const file = join(dir, "handlers", "echo.py");
    const indexFile = join(dir, "index.json");
    const first = await FileIndex.open(indexFile, { racyWindowMs: 0 });
    expect(await writeIfChanged(file, handlerSource("echo"), first)).toBe(true);
    await first.save();
    await settle();
    // just written, the entry may be racy: the next run then reads the file once to confirm it
    const second = await FileIndex.open(indexFile, { racyWindowMs: 0 });
    expect(await writeIfChanged(file, handlerSource("echo"), second)).toBe(false);
    await second.save();
    await settle();
    const third = await FileIndex.open(indexFile, { racyWindowMs: 0 });
    expect(await writeIfChanged(file, handlerSource("echo"), third)).toBe(false);
    expect(third.stats.reusedFiles).toBe(1);
    // another content is never taken for the recorded one
    expect(await writeIfChanged(file, handlerSource("other"), third)).toBe(true);
    expect(read(file)).toBe(handlerSource("other"));
  });

  it("writes nothing when nothing changed, never saves build-folder entries, and drops unused entries only when pruning", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-index-"));
    const [kept, gone] = [join(dir, "kept.txt"), join(dir, "gone.txt")];
    writeFileSync(kept, "kept");
    writeFileSync(gone, "gone");
    const buildDir = join(dir, ".build");
    const indexFile = join(dir, "index.json");
    const open = () => FileIndex.open(indexFile, { racyWindowMs: 0, transientDir: buildDir });
    await settle();
    const first = await open();
    await first.digest(kept);
    await first.digest(gone);
    expect(await writeIfChanged(join(buildDir, "handler.py"), "print(1)\n", first)).toBe(true);
    await first.save();
    expect(Object.keys(JSON.parse(read(indexFile)).entries).sort()).toEqual([gone, kept]);

    // the build folder is written afresh, the sources are unchanged: the index file is left as is
    const written = statSync(indexFile, { bigint: true }).mtimeNs;
    await settle();
    const second = await open();
    await second.digest(kept);
    await second.digest(gone);
    await writeIfChanged(join(buildDir, "handler.py"), "print(1)\n", second);
    await second.save({ prune: true });
    expect(second.stats).toMatchObject({ hashedFiles: 0, reusedFiles: 2 });
    expect(statSync(indexFile, { bigint: true }).mtimeNs).toBe(written);

    // an intermediate save keeps entries this run has not used (yet); the last one (prune) drops them
    const third = await open();
    await third.digest(kept);
    await third.save();
    expect(statSync(indexFile, { bigint: true }).mtimeNs).toBe(written);
    await third.save({ prune: true });
    expect(Object.keys(JSON.parse(read(indexFile)).entries)).toEqual([kept]);
  });

  it("keeps the interpreter's stdlib list between runs, so a build with nothing changed starts no Python", async () => {
    const root = copyFixture("multi-endpoint");
    const ctx = await buildUntilManifest(root);
    const first = await stdlibWithCache(ctx, sharedParser());
    expect(first.modules).toContain("json");
    const cacheFile = join(root, ".svc", ANALYSIS_CACHE_FILE);
    const cache = JSON.parse(read(cacheFile));
    cache.stdlib.modules.push("zz_cached_marker");
    writeFileSync(cacheFile, JSON.stringify(cache));
    const again = await buildUntilManifest(root);
    expect((await stdlibWithCache(again, sharedParser())).modules).toContain("zz_cached_marker");
  });

  it("keeps discovery results between runs: an unchanged file is not parsed again, an edited one is", async () => {
    const root = copyFixture("multi-endpoint");
    await buildUntilManifest(root);
    const cacheFile = join(root, ".svc", ANALYSIS_CACHE_FILE);
    const cache = JSON.parse(read(cacheFile)) as { entries: Record<string, { functions?: Array<{ name: string }> }> };
    // mark the cached analyses: a second run that parsed again would not see the mark
    for (const analysis of Object.values(cache.entries)) for (const fn of analysis.functions ?? []) if (fn.name === "resize") fn.name = "resize_cached";
    writeFileSync(cacheFile, JSON.stringify(cache));
    const again = await buildUntilManifest(root);
    expect(again.functions.map((fn) => fn.name)).toContain("resize_cached");
    const owner = again.functions.find((fn) => fn.name === "resize_cached")!.file;
    writeFileSync(join(root, owner), `${read(join(root, owner))}\n# edited\n`);
    expect((await buildUntilManifest(root)).functions.map((fn) => fn.name)).toContain("resize");
  });
});
