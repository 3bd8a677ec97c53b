/** svc:pip-install: pip's command line, the deps cache, pruning of excluded packages, a real install. */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { runBuild as runPipeline } from "../../testing/index.ts";
import { createLogger } from "../../core/logger.ts";
import type { SvcError } from "../../core/errors.ts";
import { depsHash, pipArgs, pruneExcluded } from "../../plugins/pip-install.ts";
import { saveEnv } from "../_support/env.ts";
import { copyFixture, pypiReachable } from "./_helpers.ts";

const online = await pypiReachable();
// each test's installs in a cache of its own (the default one is shared by the user's apps)
afterAll(saveEnv("SVC_CACHE_DIR"));
beforeEach(() => {
  process.env.SVC_CACHE_DIR = mkdtempSync(join(tmpdir(), "svc-deps-cache-"));
});
afterEach(() => rmSync(process.env.SVC_CACHE_DIR!, { recursive: true, force: true }));
if (!online) console.warn("pip-install tests that need PyPI are skipped: https://pypi.org did not answer a HEAD request");

describe("pip command and cache key", () => {
  it("installs Linux x86_64 binary wheels into --target", () => {
    expect(pipArgs("/t", "/r.txt", "3.11", ["--index-url", "https://x"]).join(" ")).toBe(
      "-m pip install --target /t --python-version 3.11 --implementation cp --only-binary=:all: --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --upgrade --no-compile --disable-pip-version-check --no-input --index-url https://x -r /r.txt",
    );
  });

  it("keys the cache on the requirement set, pip options, Python version and exclusions", () => {
    const reqs = [{ spec: "six==1.17.0", name: "six", source: "x" }];
    const base = depsHash(reqs, [], "3.11", ["numpy"]);
    expect(depsHash([...reqs].reverse(), [], "3.11", ["numpy"])).toBe(base);
    expect(depsHash([{ ...reqs[0]!, source: "elsewhere" }], [], "3.11", ["numpy"])).toBe(base);
    expect(depsHash(reqs, [], "3.12", ["numpy"])).not.toBe(base);
    expect(depsHash(reqs, ["--pre"], "3.11", ["numpy"])).not.toBe(base);
    expect(depsHash([{ spec: "six==1.16.0", name: "six", source: "x" }], [], "3.11", ["numpy"])).not.toBe(base);
    expect(depsHash(reqs, [], "3.11", ["numpy", "pillow"])).not.toBe(base);
  });
});

describe("pruneExcluded", () => {
  it("removes an excluded distribution's files, scripts, .libs and dist-info, and keeps the rest", async () => {
    const target = join(mkdtempSync(join(tmpdir(), "svc-prune-")), "site-packages");
    const write = (path: string, text = "x") => {
      mkdirSync(join(target, path, ".."), { recursive: true });
      writeFileSync(join(target, path), text);
    };
    write("numpy/__init__.py");
    write("numpy/core/multiarray.py");
    write("numpy.libs/libopenblas.so");
    write("bin/f2py");
    write("numpy-2.1.0.dist-info/top_level.txt", "numpy\n");
    write(
      "numpy-2.1.0.dist-info/RECORD",
      "numpy/__init__.py,sha256=a,1\nnumpy/core/multiarray.py,,\n../../bin/f2py,sha256=b,2\nnumpy.libs/libopenblas.so,,\n../../../etc/passwd,,\n",
    );
    write("six.py");
    write("six-1.17.0.dist-info/RECORD", "six.py,,\n");
    expect(await pruneExcluded(target, new Set(["numpy"]))).toEqual(["numpy"]);
    expect(readdirSync(target).sort()).toEqual(["six-1.17.0.dist-info", "six.py"]);
  });
});

describe.skipIf(!online)("real pip install (PyPI)", () => {
  it("installs six into site-packages/ of the artifact, and a second build takes it from the cache", { timeout: 120_000 }, async () => {
    const root = copyFixture("pack-app");
    const first = await runPipeline({ root, logger: createLogger("silent") });
    expect(first.meta.get("svc:pip-install")).toMatchObject({ ran: true, cacheHit: false });
    const paths = first.artifact!.entries.map((e) => e.path);
    expect(paths).toContain("site-packages/six.py");
    expect(paths.some((p) => /^site-packages\/six-1\.17\.0\.dist-info\/METADATA$/.test(p))).toBe(true);
    expect(first.depsDir).toBe(join(process.env.SVC_CACHE_DIR!, "deps", first.meta.get("svc:pip-install")!.hash!, "site-packages"));

    const second = await runPipeline({ root, logger: createLogger("silent") });
    expect(second.meta.get("svc:pip-install")).toMatchObject({ ran: false, cacheHit: true });
    expect(second.artifact!.sha256).toBe(first.artifact!.sha256);
  });

  it("warns once about a path two groups put into an artifact packed with cached dependencies", { timeout: 120_000 }, async () => {
    const root = copyFixture("pack-app");
    mkdirSync(join(root, "svc"), { recursive: true });
    writeFileSync(join(root, "svc", "__init__.py"), "# shadows the SDK\n");
    const logger = createLogger("silent");
    const ctx = await runPipeline({ root, logger });
    expect(ctx.meta.get("svc:tar-pack")).toMatchObject({ reused: false });
    expect(ctx.artifact!.entries.map((e) => e.path)).toContain("site-packages/six.py");
    expect(logger.warnings.filter((w) => w.includes("svc/__init__.py: the svc SDK file replaces the app source file"))).toHaveLength(1);
  });

  it("removes an excluded package pip pulled in transitively, and says so", { timeout: 120_000 }, async () => {
    const root = copyFixture("pack-app");
    writeFileSync(join(root, "requirements.txt"), "python-dateutil==2.9.0.post0\n");
    const logger = createLogger("silent");
    const ctx = await runPipeline({ root, logger, options: { exclude: ["six"] } });
    const paths = ctx.artifact!.entries.map((e) => e.path);
    expect(paths).toContain("site-packages/dateutil/__init__.py");
    expect(paths.filter((p) => p.startsWith("site-packages/six"))).toEqual([]);
    expect(logger.warnings).toContainEqual(expect.stringMatching(/removed six from the installed dependencies: .*excluded by --exclude/));
    expect(readFileSync(join(ctx.depsDir!, "dateutil", "__init__.py"), "utf8")).toBeTruthy();
  });

  it("surfaces pip's own error with the remedy", { timeout: 120_000 }, async () => {
    const root = copyFixture("pack-app");
    writeFileSync(join(root, "requirements.txt"), "svc-surely-no-such-package-0x1f==1.0\n");
    const error = (await runPipeline({ root, logger: createLogger("silent") }).catch((e: unknown) => e)) as SvcError;
    expect(error.code).toBe("PIP_FAILED");
    expect(error.message).toMatch(/ERROR: (Could not find a version|No matching distribution)/);
    expect(error.remedy).toContain("manylinux");
    // a failed install leaves no cache entry behind
    expect(readdirSync(join(process.env.SVC_CACHE_DIR!, "deps"))).toEqual([]);
    // spec 2.5: the build folder is removed after a failed build too (unless --keep-build)
    expect(existsSync(join(root, ".svc", ".build"))).toBe(false);
  });
});
