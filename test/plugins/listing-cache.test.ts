/** The file listing kept between runs (plugins/discover-python/_listing-cache.ts, docs/manifest.md "File listing"). */
import { appendFileSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { listSourceFiles, listSourceFilesWithCache } from "../../plugins/discover-python/index.ts";
import { RACY_WINDOW_MS } from "../../core/file-stat.ts";
import { copyFixture } from "./_front-half.ts";

/** Past the file system's timestamp tick, so that a change made now shows in the folder's stat. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe("listSourceFilesWithCache", () => {
  const app = () => {
    const root = copyFixture("multi-endpoint");
    // .svc/ exists before the first listing, as on any rebuild (creating it changes the root's stat)
    mkdirSync(join(root, ".svc", "cache"), { recursive: true });
    return { root, cacheFile: join(root, ".svc", "cache", "listing.json") };
  };
  /** racyWindowMs 0: a folder listed after its last change is trusted (the tests wait one tick, not 2 s). */
  const list = (root: string, cacheFile: string, extra: string[] = [], racyWindowMs = 0) => listSourceFilesWithCache(root, extra, cacheFile, { racyWindowMs });

  it("answers what listSourceFiles answers, and on the next run reads no folder that did not change", async () => {
    const { root, cacheFile } = app();
    await settle();
    const first = await list(root, cacheFile);
    expect(first.files).toEqual(await listSourceFiles(root));
    expect(first.files).toContain("workers/cpu.py");
    expect(first.stats.reusedFolders).toBe(0);
    const second = await list(root, cacheFile);
    expect(second.files).toEqual(first.files);
    expect(second.stats).toEqual({ listedFolders: 0, reusedFolders: first.stats.listedFolders });
  });

  it("sees a file added, removed or renamed in a nested folder and a new folder, reading only the folders that changed", async () => {
    const { root, cacheFile } = app();
    await settle();
    const first = await list(root, cacheFile);
    writeFileSync(join(root, "workers", "extra.py"), "X = 1\n");
    rmSync(join(root, "helpers", "text.py"));
    renameSync(join(root, "data", "prompts.json"), join(root, "data", "prompts-v2.json"));
    mkdirSync(join(root, "workers", "nested"));
    writeFileSync(join(root, "workers", "nested", "deep.py"), "Y = 2\n");
    await settle();
    const second = await list(root, cacheFile);
    expect(second.files).toEqual(await listSourceFiles(root));
    expect(second.files).toEqual(expect.arrayContaining(["workers/extra.py", "workers/nested/deep.py", "data/prompts-v2.json"]));
    expect(second.files).not.toContain("helpers/text.py");
    // workers/, workers/nested/, helpers/ and data/ read again; the root and the rest from the cache
    expect(second.stats.listedFolders).toBe(4);
    expect(second.stats.reusedFolders).toBe(first.stats.listedFolders - 3);
  });

  it("starts afresh when the ignore rules change (.svcignore, config ignore)", async () => {
    const { root, cacheFile } = app();
    await settle();
    const first = await list(root, cacheFile);
    const svcignore = join(root, ".svcignore");
    const rules = readFileSync(svcignore, "utf8");
    appendFileSync(svcignore, "data/\n");
    const ignored = await list(root, cacheFile);
    expect(ignored.stats.reusedFolders).toBe(0);
    expect(ignored.files.some((file) => file.startsWith("data/"))).toBe(false);
    writeFileSync(svcignore, rules);
    await settle();
    const byConfig = await list(root, cacheFile, ["stream.py"]);
    expect(byConfig.files).toEqual(first.files.filter((file) => file !== "stream.py"));
    expect(byConfig.files).toEqual(await listSourceFiles(root, ["stream.py"]));
  });

  it("reads a folder again when it was listed within the racy window of its last change", async () => {
    const { root, cacheFile } = app();
    writeFileSync(join(root, "workers", "fresh.py"), "Z = 3\n");
    // the real window (2 s): every folder of the copy changed just now, so no listing is trusted yet
    const first = await list(root, cacheFile, [], RACY_WINDOW_MS);
    const second = await list(root, cacheFile, [], RACY_WINDOW_MS);
    expect(second.files).toEqual(first.files);
    expect(second.files).toContain("workers/fresh.py");
    expect(second.stats).toEqual({ listedFolders: first.stats.listedFolders, reusedFolders: 0 });
  });
});
