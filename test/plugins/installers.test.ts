/**
 * svc:pip-install's two installers: uv's command line and which pip settings it takes, the same
 * installed files from uv and from pip for every requirement set of the fixtures and examples, the
 * fall-back to pip with its line, and the dependency cache shared by apps.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { runBuild } from "../../testing/index.ts";
import { createLogger } from "../../core/logger.ts";
import type { BuildContext, SvcPlugin } from "../../core/types.ts";
import { pythonInterpreter } from "../../plugins/_python/index.ts";
import { findUv, optionUvLacks, pipConfigUvIgnores, uvArgs, uvSettingsFromPipEnv } from "../../plugins/_install/uv.ts";
import { walkFiles } from "../../plugins/tar-pack.ts";
import { saveEnv } from "../_support/env.ts";
import { captureLogger, copyFixture, pypiReachable } from "./_helpers.ts";

const online = await pypiReachable();
const uv = findUv(pythonInterpreter()) ?? findUv(process.execPath);
if (!uv) console.warn("installer parity tests are skipped: no uv beside Python or on PATH (scripts/setup.sh installs it)");
afterEach(saveEnv("SVC_CACHE_DIR", "SVC_INSTALLER"));
const caches: string[] = [];
/** A dependency cache of the test's own (each install counted from empty), removed after the file (~100 MB each). */
const freshCache = () => caches.push((process.env.SVC_CACHE_DIR = mkdtempSync(join(tmpdir(), "svc-deps-cache-"))));
afterAll(() => {
  for (const dir of caches.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("uv's command line", () => {
  it("asks for the same wheels as pip: manylinux ≤ 2.28 x86_64, the configured CPython, binary only", () => {
    expect(uvArgs("/t", "/r.txt", "3.11", ["--index-url", "https://x"], "/py/bin/python3").join(" ")).toBe(
      "pip install --no-config --python /py/bin/python3 --no-python-downloads --target /t --python-version 3.11 --python-platform x86_64-manylinux_2_28 --only-binary :all: --index-url https://x -r /r.txt",
    );
  });

  it("takes the requirements files' index and wheel options, and names the first it does not", () => {
    expect(
      optionUvLacks(["-i", "https://x", "--extra-index-url", "https://y", "--find-links", "/w", "--pre", "--no-index", "--constraint", "/c.txt"]),
    ).toBeUndefined();
    expect(optionUvLacks(["--pre", "--prefer-binary", "--use-feature=truststore"])).toBe("--prefer-binary");
  });

  it("carries pip's environment settings over as uv options", () => {
    const env = { PIP_FIND_LINKS: "/opt/wheels /more", PIP_INDEX_URL: "https://mirror/simple", PIP_PRE: "1", PIP_NO_INDEX: "0", PIP_CERT: "/ca.pem" };
    expect(uvSettingsFromPipEnv(env)).toEqual({
      args: ["--index-url", "https://mirror/simple", "--find-links", "/opt/wheels", "--find-links", "/more", "--pre"],
      env: { SSL_CERT_FILE: "/ca.pem" },
    });
  });

  it("leaves a pip config file's index settings to pip, and a certificate alone to uv", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-pip-conf-"));
    const file = join(dir, "pip.conf");
    writeFileSync(file, "[global]\ncert = /ca.pem\n");
    expect(pipConfigUvIgnores({ HOME: dir, PIP_CONFIG_FILE: file })).toBeUndefined();
    writeFileSync(file, "[global]\nextra-index-url = https://mirror/simple\n");
    expect(pipConfigUvIgnores({ HOME: dir, PIP_CONFIG_FILE: file })).toBe(`${file} sets extra-index-url, which only pip reads`);
  });
});

/** svc:tar-pack replaced by a pack that writes nothing: the installed trees are what is compared (packing both was ~8 s of this file's ~49 s of CPU). */
const NO_PACK: SvcPlugin = { name: "svc:tar-pack", apply: (pipeline) => pipeline.hooks.pack.tapPromise("svc:tar-pack", async (artifact) => artifact) };

/** The installed files (paths under site-packages) a build of the app packs, and the installer that made them. */
async function installed(root: string, installer: "uv" | "pip"): Promise<{ files: string[]; ctx: BuildContext }> {
  freshCache();
  if (installer === "pip") process.env.SVC_INSTALLER = "pip";
  else delete process.env.SVC_INSTALLER;
  const ctx = await runBuild({ root, logger: createLogger("silent"), plugins: [NO_PACK] });
  expect(ctx.meta.get("svc:pip-install")).toMatchObject({ ran: true, installer });
  return { files: (await walkFiles(ctx.depsDir!)).map((file) => file.rel).sort(), ctx };
}

// every fixture and example with requirements, by its requirement set
const APPS = ["pack-app", "deps-merge", "imports-ok", "pandas-cpu", "build-checks", "../examples/image-to-video"];

/** deps-merge is requirements only: a GPU endpoint (torch and numpy preinstalled, so excluded), and without its unreachable extra index (only pip takes one: below). */
function buildable(app: string, root: string): void {
  if (app !== "deps-merge") return;
  writeFileSync(join(root, "app.py"), GPU_APP);
  const extra = join(root, "extra", "more.txt");
  writeFileSync(extra, readFileSync(extra, "utf8").replace(/^--extra-index-url .*\n/m, ""));
}
const GPU_APP =
  'from svc import Endpoint, GpuGroup\n\n\n@Endpoint(name="merge", gpu=GpuGroup.ADA_80_PRO, workers=(0, 1))\ndef merge(text: str = "") -> dict:\n    return {"text": text}\n';

describe.skipIf(!online || !uv)("uv and pip install the same files (PyPI)", () => {
  for (const app of APPS) {
    it(`${app}`, { timeout: 300_000 }, async () => {
      const root = copyFixture(app);
      buildable(app, root);
      const byUv = await installed(root, "uv");
      const byPip = await installed(root, "pip");
      expect(byUv.files.length).toBeGreaterThan(0);
      expect(byUv.files).toEqual(byPip.files);
      // the same tree for the same key: the installer is not part of it
      expect(byUv.ctx.meta.get("svc:pip-install")!.hash).toBe(byPip.ctx.meta.get("svc:pip-install")!.hash);
    });
  }
});

describe.skipIf(!online || !uv)("falling back to pip, and the cache shared by apps (PyPI)", () => {
  it("installs with pip, and says why, what uv cannot take", { timeout: 120_000 }, async () => {
    freshCache();
    const root = copyFixture("pack-app");
    writeFileSync(join(root, "requirements.txt"), "--prefer-binary\nsix==1.17.0\n");
    const logger = captureLogger();
    const ctx = await runBuild({ root, logger });
    expect(ctx.meta.get("svc:pip-install")).toMatchObject({ ran: true, installer: "pip" });
    expect(ctx.artifact!.entries.map((e) => e.path)).toContain("site-packages/six.py");
    expect(logger.lines).toContainEqual(expect.stringContaining("installing dependencies with pip: uv does not take the requirements' option --prefer-binary"));
  });

  it("falls back to pip, with uv's reason, when uv fails where pip does not: an extra index that does not answer", { timeout: 180_000 }, async () => {
    freshCache();
    const root = copyFixture("pack-app");
    writeFileSync(join(root, "requirements.txt"), "--extra-index-url http://127.0.0.1:9/simple\nsix==1.17.0\n");
    const logger = captureLogger();
    const ctx = await runBuild({ root, logger });
    expect(ctx.meta.get("svc:pip-install")).toMatchObject({ ran: true, installer: "pip" });
    expect(ctx.artifact!.entries.map((e) => e.path)).toContain("site-packages/six.py");
    expect(logger.warnings).toContainEqual(
      expect.stringMatching(/^uv could not install the requirements \(error: .*127\.0\.0\.1:9.*\): installing them with pip$/),
    );
  });

  it("a second app with the same requirements installs nothing", { timeout: 120_000 }, async () => {
    freshCache();
    const first = await runBuild({ root: copyFixture("pack-app"), logger: createLogger("silent") });
    const second = await runBuild({ root: copyFixture("pack-app"), logger: createLogger("silent") });
    expect(first.meta.get("svc:pip-install")).toMatchObject({ ran: true, cacheHit: false });
    expect(second.meta.get("svc:pip-install")).toMatchObject({ ran: false, cacheHit: true });
    expect(second.depsDir).toBe(first.depsDir);
    expect(second.artifact!.entries.filter((e) => e.path.startsWith("site-packages/"))).toEqual(
      first.artifact!.entries.filter((e) => e.path.startsWith("site-packages/")),
    );
  });
});
