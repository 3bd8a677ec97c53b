/**
 * The build's checks as a new user meets them (real CLI, --no-deps: nothing installed): an
 * `--exclude` that names no requirement says which one it probably meant; a GPU endpoint's pin of a
 * package the image pre-installs (torch==2.3.0) names the pin and the image's version; each is a
 * warning, and under --strict every problem of the run fails it together (two bad imports, the
 * typo and the pin: STRICT_CHECKS_FAILED listing each), not only the first.
 */
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { runSvc } from "../_support/cli.ts";
import { copyFixture } from "../plugins/_helpers.ts";
import { gpuImagePython } from "../../plugins/image-pins.ts";

/** The torch the GPU image's interpreter has here (Debian's 1.13 on these machines), if any. */
const imageTorch = (() => {
  try {
    return execFileSync(gpuImagePython(), ["-c", "import importlib.metadata as m; print(m.version('torch'))"], { encoding: "utf8" }).trim();
  } catch {
    return undefined;
  }
})();

describe("build checks", { timeout: 120_000 }, () => {
  const root = copyFixture("build-checks");
  const svc = (args: string[]) => runSvc(["build", "--no-deps", "--root", root, ...args], { env: { ...process.env, NO_COLOR: "1" } });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("warns about each problem and builds: the --exclude typo with did-you-mean, the torch pin with the image's version, both imports", async () => {
    const r = await svc(["--exclude", "reqests"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('--exclude names "reqests", which is no requirement of this build; did you mean "requests"?');
    expect(r.stderr).toContain("Exclude requests instead (--exclude requests).");
    expect(r.stderr).toContain('gen.py:2: Module-level import of "not_installed_one"');
    expect(r.stderr).toContain('gen.py:3: Module-level import of "not_installed_two"');
    if (imageTorch)
      expect(r.stderr).toContain(
        `requirements.txt:1 pins torch==2.3.0, but torch is pre-installed in the GPU image and left out of the artifact: workers import the image's torch ${imageTorch}`,
      );
    else console.warn("no torch for the GPU image's interpreter here: the pin check is not exercised");
  });

  it("an --exclude that does match is no problem", async () => {
    const r = await svc(["--exclude", "requests"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toContain("EXCLUDE_UNMATCHED");
    expect(r.stderr).not.toContain("which is no requirement");
  });

  it("--strict reports every problem in one run and fails", async () => {
    const r = await svc(["--strict", "--exclude", "reqests"]);
    expect(r.code).toBe(1);
    const count = imageTorch ? 4 : 3;
    expect(r.stderr).toContain(`[STRICT_CHECKS_FAILED] ${count} build checks failed under --strict:`);
    expect(r.stderr).toContain("[EXCLUDE_UNMATCHED]");
    expect(r.stderr.match(/\[IMPORT_NOT_IN_IMAGE\]/g)).toHaveLength(2);
    if (imageTorch) expect(r.stderr).toContain("[IMAGE_PIN_IGNORED] requirements.txt:1 pins torch==2.3.0");
  });
});
