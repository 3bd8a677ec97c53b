/**
 * svc:check-imports: module-level imports a deployed worker cannot satisfy are warned about at
 * file:line (an error with --strict / config strict), following the app's own imports from each
 * endpoint; requirements count by the import names they install (a real pip install from PyPI).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createContext, defaultBuildOptions } from "../../core/build.ts";
import { resolveConfig } from "../../core/config.ts";
import { Pipeline } from "../../core/pipeline.ts";
import type { BuildOptions, SvcConfig } from "../../core/types.ts";
import { checkImports } from "../../plugins/check-imports.ts";
import { PythonParser } from "../../plugins/_python/index.ts";
import { excludePreinstalled } from "../../plugins/exclude-preinstalled.ts";
import { pipInstall } from "../../plugins/pip-install.ts";
import { resolveDeps } from "../../plugins/resolve-deps.ts";
import { runSvc } from "../_support/cli.ts";
import { frontHalfPlugins } from "./_front-half.ts";
import { captureLogger, copyFixture, pypiReachable } from "./_helpers.ts";

const online = await pypiReachable();
if (!online) console.warn("the check-imports test that installs from PyPI is skipped: https://pypi.org did not answer");

/** Discovery to the import check (no packing); pip runs unless noDeps. */
async function build(root: string, options: Partial<BuildOptions> = { noDeps: true }, config: SvcConfig = {}, parser?: PythonParser) {
  const logger = captureLogger();
  const ctx = createContext(root, await resolveConfig(root, config), { ...defaultBuildOptions, ...options }, logger);
  await new Pipeline([...frontHalfPlugins(), resolveDeps(), excludePreinstalled(), pipInstall(), checkImports({ parser })]).run(ctx);
  return { ctx, warnings: logger.warnings.filter((line) => line.includes("Module-level import")) };
}

describe("svc:check-imports", () => {
  it("accepts stdlib, the GPU image's packages, requirements by import name (pillow → PIL), app modules and guarded imports", async () => {
    const root = copyFixture("imports-ok");
    const { warnings } = await build(root);
    expect(warnings).toEqual([]);
  });

  it("warns at file:line, naming the endpoint, the image and the spec's remedy; the build goes on", async () => {
    const root = copyFixture("imports-ok");
    writeFileSync(join(root, "requirements.txt"), "");
    const { ctx, warnings } = await build(root);
    expect(ctx.endpoints).toHaveLength(2);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('app/gpu.py:9: Module-level import of "PIL", which endpoint "gpu" will not find when deployed');
    expect(warnings[0]).toContain("the GPU image");
    expect(warnings[0]).toContain("Import packages inside the endpoint function body, not at file top, or add pillow to requirements.txt.");
    expect(warnings[0]!.match(/→/g)).toHaveLength(1); // the remedy once
  });

  it("numpy in requirements.txt and at the top of a CPU endpoint's module: kept in the artifact, no warning; excluded by the user: the remedy says to stop excluding it", async () => {
    const root = copyFixture("errors/import-excluded-by-user");
    const kept = await build(root);
    expect(kept.ctx.requirements.map((r) => r.name)).toContain("numpy");
    expect(kept.ctx.excluded).toEqual([]);
    expect(kept.warnings).toEqual([]);
    const excluded = await build(root, { noDeps: true, exclude: ["numpy"] });
    expect(excluded.warnings).toHaveLength(1);
    expect(excluded.warnings[0]).toContain("or remove numpy from --exclude / config exclude.");
    expect(excluded.warnings[0]).not.toContain("requirements.txt");
  });

  it("checks each endpoint against its own image: torch at the top of a module a CPU endpoint imports", async () => {
    const root = copyFixture("imports-ok");
    writeFileSync(join(root, "app/shared.py"), "import re\nimport torch\n\n\ndef clean(text: str) -> str:\n    return re.sub(r'\\s+', ' ', text).strip()\n");
    const { warnings } = await build(root);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('app/shared.py:2: Module-level import of "torch", which endpoint "cpu" will not find');
    expect(warnings[0]).toContain("the CPU image");
  });

  it("asks Python for the stdlib once: a rebuild reads it from .svc/cache", async () => {
    /** A real parser that counts the stdlib requests it sends to Python. */
    class CountingParser extends PythonParser {
      asked = 0;
      override stdlib() {
        this.asked++;
        return super.stdlib();
      }
    }
    const root = copyFixture("imports-ok");
    writeFileSync(join(root, "requirements.txt"), "");
    const first = new CountingParser();
    const second = new CountingParser();
    try {
      expect((await build(root, { noDeps: true }, {}, first)).warnings).toHaveLength(1);
      expect((await build(root, { noDeps: true }, {}, second)).warnings).toHaveLength(1); // same verdict from the cached list
      expect([first.asked, second.asked]).toEqual([1, 0]);
    } finally {
      first.close();
      second.close();
    }
  });

  it("config strict makes it an error at file:line", async () => {
    const root = copyFixture("errors/import-not-installed");
    const error = await build(root, { noDeps: true }, { strict: true }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: "IMPORT_NOT_IN_IMAGE", file: "worker.py", line: 3 });
  });

  it("`svc build --strict` fails with file:line and the remedy; without it, the build warns and succeeds", { timeout: 60_000 }, async () => {
    const root = copyFixture("errors/import-not-installed");
    const svc = (args: string[]) => runSvc(["build", "--no-deps", "--root", root, ...args], { env: { ...process.env, NO_COLOR: "1" } });
    const strict = await svc(["--strict"]);
    expect(strict.code).toBe(1);
    expect(strict.stderr).toContain("IMPORT_NOT_IN_IMAGE");
    expect(strict.stderr).toContain('worker.py:3: Module-level import of "not_installed_pkg"');
    expect(strict.stderr).toContain("Import packages inside the endpoint function body, not at file top");
    const lenient = await svc([]);
    expect(lenient.code).toBe(0);
    expect(lenient.stderr).toContain('worker.py:3: Module-level import of "not_installed_pkg"');
  });

  it.skipIf(!online)("maps installed distributions to their import names from site-packages (pyserial → serial)", { timeout: 120_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), "svc-imports-"));
    try {
      writeFileSync(join(root, "requirements.txt"), "pyserial==3.5\n");
      writeFileSync(
        join(root, "worker.py"),
        "import serial\nfrom svc import Endpoint\n\n\n@Endpoint(name='port', cpu='cpu3c-2-4')\ndef open_port(name: str) -> str:\n    return serial.__name__\n",
      );
      // Not installed, the requirement name says nothing of `serial`: a warning.
      expect((await build(root, { noDeps: true })).warnings).toHaveLength(1);
      // Installed, site-packages says pyserial provides `serial`: no warning.
      const installed = await build(root, { noDeps: false });
      expect(installed.ctx.depsDir).toBeDefined();
      expect(installed.warnings).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
