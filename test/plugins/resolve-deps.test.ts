import { execFile, spawnSync } from "node:child_process";
import { appendFileSync, chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { droppableFor, IMAGE_PACKAGES } from "../../core/images.ts";
import type { EndpointSpec } from "../../core/types.ts";
import { excludePreinstalled } from "../../plugins/exclude-preinstalled.ts";
import { mergeRequirements, normalizeName, parseRequirements } from "../../plugins/_requirements.ts";
import { collectRequirements, resolveDeps } from "../../plugins/resolve-deps.ts";
import { pipOptionsOf } from "../../plugins/_requirements.ts";
import { copyFixture, endpoint, makeCtx, runPlugins } from "./_helpers.ts";

describe("requirement parsing", () => {
  it("normalises names per PEP 503", () => {
    expect(normalizeName("Typing_Extensions")).toBe("typing-extensions");
    expect(normalizeName("zope.interface")).toBe("zope-interface");
    expect(normalizeName("A__B--c")).toBe("a-b-c");
  });

  it("parses extras, specifiers, markers and URLs with pip's packaging, in the order written", async () => {
    const [ranged, named, wheel, sdist, egg, nothing] = await parseRequirements([
      'requests[socks,security] >=2.0, <3 ; python_version < "3.12"',
      "pkg @ https://example.com/pkg-1.0-py3-none-any.whl",
      "https://example.com/dl/My_Pkg-2.1-py3-none-any.whl",
      "./dist/Zope.Interface-6.0.tar.gz",
      "git+https://example.com/repo.git#egg=Foo_Bar",
      "not a requirement !",
    ]);
    expect(ranged).toEqual({
      name: "requests",
      written: "requests",
      extras: ["socks", "security"],
      specifiers: [">=2.0", "<3"],
      marker: 'python_version < "3.12"',
    });
    expect(named).toMatchObject({ name: "pkg", url: "https://example.com/pkg-1.0-py3-none-any.whl" });
    expect(wheel).toMatchObject({ name: "my-pkg", url: "https://example.com/dl/My_Pkg-2.1-py3-none-any.whl" });
    expect(sdist).toMatchObject({ name: "zope-interface" });
    expect(egg).toMatchObject({ name: "foo-bar" });
    expect(nothing).toBeUndefined();
  });

  it("reads what the old hand-written parser guessed at: a name's case and separators, ===, wildcards, spaces in markers", async () => {
    const [legacy, arbitrary, marker] = await parseRequirements([
      "Typing_Extensions == 4.*",
      "weird===1.0-custom",
      'numpy>=1.26;platform_machine=="x86_64" and python_version>="3.10"',
    ]);
    expect(legacy).toMatchObject({ name: "typing-extensions", written: "Typing_Extensions", specifiers: ["==4.*"] });
    expect(arbitrary).toMatchObject({ name: "weird", specifiers: ["===1.0-custom"] });
    expect(marker).toMatchObject({ name: "numpy", specifiers: [">=1.26"], marker: 'platform_machine == "x86_64" and python_version >= "3.10"' });
  });
});

describe("svc:resolve-deps", () => {
  it("reads requirements.txt with includes, options and markers, and merges endpoint dependencies", async () => {
    const root = copyFixture("deps-merge");
    const ctx = makeCtx(root, { endpoints: [endpoint("cpu-worker", ["pillow>=9", "humanize==4.12.3"]), endpoint("api", ["requests==2.32.3"])] });
    const { requirements, pipOptions } = await collectRequirements(ctx);
    const byName = Object.fromEntries(requirements.map((r) => [r.name, r]));
    expect(Object.keys(byName)).toEqual(["requests", "pillow", "torch", "numpy", "six", "typing-extensions", "humanize"]);
    // the exact pin from endpoint "api" beats >=2.0 and the bare requests[socks]; extras are kept
    expect(byName.requests!.spec).toBe("requests[socks]==2.32.3");
    expect(byName.requests!.source).toBe("requirements.txt:3, extra/more.txt:2, endpoint api");
    // the pin in requirements.txt beats the endpoint's range
    expect(byName.pillow!.spec).toBe("Pillow==10.4.0");
    expect(byName["typing-extensions"]!.spec).toBe('typing_extensions ; python_version < "3.12"');
    // hashes are dropped, continuation lines joined
    expect(byName.six).toEqual({ spec: "Six>=1.0", name: "six", source: "extra/more.txt:4" });
    expect(byName.humanize!.source).toBe("endpoint cpu-worker");
    expect(pipOptions).toEqual(["--index-url", "https://pypi.org/simple", "--extra-index-url", "https://example.invalid/simple"]);
  });

  it("intersects two ranges of the same project", async () => {
    const merged = await mergeRequirements([
      { spec: "attrs>=21", name: "attrs", source: "a" },
      { spec: "attrs<24", name: "attrs", source: "b" },
    ]);
    expect(merged).toEqual([{ spec: "attrs>=21,<24", name: "attrs", source: "a, b" }]);
  });

  it("runs as a plugin and keeps pip options for svc:pip-install", async () => {
    const ctx = makeCtx(copyFixture("deps-merge"));
    await runPlugins([resolveDeps()], ctx);
    expect(ctx.requirements.map((r) => r.name)).toContain("torch");
    expect(pipOptionsOf(ctx)).toContain("--index-url");
  });
});

describe("svc:exclude-preinstalled", () => {
  it("drops pre-installed and user-excluded packages and says which and why", async () => {
    const ctx = makeCtx(copyFixture("deps-merge"), {
      options: { exclude: ["Pillow"] },
      config: { exclude: ["typing-extensions"] },
      endpoints: [gpuEndpoint("gen")],
    });
    await runPlugins([resolveDeps(), excludePreinstalled()], ctx);
    expect(ctx.requirements.map((r) => r.name)).toEqual(["requests", "six"]);
    expect(ctx.excluded.map((r) => [r.name, r.reason])).toEqual([
      ["pillow", "excluded-by-user"],
      ["torch", "preinstalled"],
      ["numpy", "preinstalled"],
      ["typing-extensions", "excluded-by-user"],
    ]);
    expect(ctx.logger.warnings).toContainEqual(
      expect.stringMatching(/^excluded torch \(requirements\.txt:6\): pre-installed in the base image of every endpoint/),
    );
    expect(ctx.logger.warnings).toContainEqual(
      expect.stringMatching(/^excluded numpy \(extra\/more\.txt:3\): pre-installed in the base image of every endpoint/),
    );
    expect(ctx.logger.lines).toContainEqual("excluded pillow (requirements.txt:4): excluded by --exclude / config exclude");
  });

  it("drops a pre-installed package only when every endpoint's image holds it: a CPU endpoint keeps numpy and torch", async () => {
    const ctx = makeCtx(copyFixture("deps-merge"), { endpoints: [gpuEndpoint("gen"), endpoint("cpu")] });
    await runPlugins([resolveDeps(), excludePreinstalled()], ctx);
    expect(ctx.requirements.map((r) => r.name)).toEqual(expect.arrayContaining(["torch", "numpy"]));
    expect(ctx.excluded).toEqual([]);
    expect(droppableFor([gpuEndpoint("a")])).toEqual([...IMAGE_PACKAGES.gpu]);
    expect(droppableFor([endpoint("a")])).toEqual([]);
    expect(droppableFor([])).toEqual([]);
  });
});

function gpuEndpoint(name: string): EndpointSpec {
  return { ...endpoint(name), hardware: { gpuIds: ["ADA_24"], gpuCount: 1 } };
}

describe("requirements read once", () => {
  it("a build whose requirements did not change starts no Python for them (.svc/cache/requirements.json); an edited line is read", async () => {
    const repo = resolve(import.meta.dirname, "../..");
    const dir = mkdtempSync(join(tmpdir(), "svc-requirements-cache-"));
    try {
      const real = spawnSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).stdout.trim();
      const log = join(dir, "starts.log");
      const python = join(dir, "python3");
      writeFileSync(python, `#!/bin/sh\necho started >> "${log}"\nexec "${real}" "$@"\n`);
      chmodSync(python, 0o755);
      const app = join(dir, "app");
      cpSync(join(repo, "fixtures", "deploy-app"), app, { recursive: true, filter: (src) => !src.includes(".svc") });
      writeFileSync(join(app, "requirements.txt"), "requests>=2.0\nPillow==10.4.0\n");
      const starts = () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean).length : 0);
      const build = () =>
        promisify(execFile)(process.execPath, [join(repo, "bin", "svc.mjs"), "build", "--no-deps", "--json"], {
          cwd: app,
          env: { ...process.env, SVC_PYTHON: python, NO_COLOR: "1" },
        });

      await build();
      expect(starts()).toBeGreaterThan(0);
      const first = starts();
      await build();
      expect(starts()).toBe(first);
      appendFileSync(join(app, "requirements.txt"), "humanize==4.12.3\n");
      const { stdout } = await build();
      expect(starts()).toBe(first + 1);
      expect(JSON.parse(stdout).ok).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
