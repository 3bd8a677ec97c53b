/**
 * A packer that replaces svc:tar-pack finds what it must pack through the plugin API, not a
 * hard-coded path: svc's Python runtime (ctx.svc.runtimeDir, copied as `svc/`), the build folder and
 * the app's files. Here one written as a user would, with the system's `tar`; its artifact goes
 * through afterPack (svc:size-guard) like svc's own, and holds the runtime a worker imports.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { SvcPlugin } from "../../core/types.ts";
import { runBuild } from "../../plugins/index.ts";
import { captureLogger, copyFixture } from "./_helpers.ts";

const sysTarPacker: SvcPlugin = {
  name: "sys-tar-pack",
  apply(pipeline) {
    pipeline.hooks.pack.tapPromise("sys-tar-pack", async (_artifact, ctx) => {
      const path = join(ctx.outDir, "artifact.tar.gz");
      const runtimeParent = join(ctx.svc.runtimeDir, "..");
      execFileSync("tar", ["-czf", path, "--exclude=__pycache__", "-C", ctx.root, ...ctx.sourceFiles, "-C", ctx.buildDir, ".", "-C", runtimeParent, "svc"]);
      const listed = execFileSync("tar", ["-tzf", path], { encoding: "utf8" })
        .split("\n")
        .filter((p) => p && !p.endsWith("/"));
      return {
        path,
        sha256: createHash("sha256").update(readFileSync(path)).digest("hex"),
        size: statSync(path).size,
        unpackedSize: statSync(path).size,
        entries: listed.map((p) => ({ path: p.replace(/^\.\//, ""), size: 0 })),
      };
    });
  },
};

describe("a packer replacing svc:tar-pack", () => {
  const root = copyFixture("pack-app");
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("packs svc's runtime from ctx.svc.runtimeDir, the handlers and the app's files", { timeout: 60_000 }, async () => {
    const ctx = await runBuild({ root, options: { noDeps: true }, logger: captureLogger(), disable: ["svc:tar-pack"], plugins: [sysTarPacker] });
    expect(existsSync(join(ctx.svc.runtimeDir, "__init__.py"))).toBe(true);
    expect(ctx.svc.version).toMatch(/^\d+\.\d+\.\d+/);
    const paths = ctx.artifact!.entries.map((e) => e.path);
    expect(paths).toContain("svc/__init__.py");
    expect(paths).toContain("svc_manifest.json");
    expect(paths.some((p) => p.startsWith("handlers/"))).toBe(true);
    expect(paths).toContain(ctx.sourceFiles.find((f) => f.endsWith(".py"))!);
  });
});
