/**
 * Once before the suite (vitest.config.ts `globalSetup`), two things that save CPU on every process
 * the tests start, changing nothing a test checks.
 *
 * The CLI: the published build of this checkout (tsdown.config.ts's JavaScript, ~0.6 s) is made in
 * node_modules/.cache/ for this run, and SVC_BUILT_CLI has bin/svc.mjs run it instead of the sources
 * through tsx: `svc build` of a small app 1.3 → 0.4 s of CPU, over hundreds of commands a run. The
 * tests that look at which source modules a command loads run the sources (test/cli/help.test.ts).
 *
 * Python: when `python3` on PATH is a version
 * manager's shim rather than the interpreter (pyenv's is a bash script that runs several programs to
 * pick the version), the interpreter's own folder goes first on PATH for every test file. Each of the
 * suite's hundreds of Python starts (workers, the build's helper, pip, uv, Ray) then skips the shim:
 * about 0.1 s of CPU and 0.3 s each on CI's machine. The interpreter, and the pip and ray beside it,
 * are those the shim would have run, so nothing a test checks changes; where python3 is the
 * interpreter itself (Debian's /usr/bin/python3) PATH is left alone.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { delimiter, dirname, join, resolve } from "node:path";
import { build } from "tsdown";
import { javascript } from "../../tsdown.config.ts";

export default async function setup(): Promise<() => Promise<void>> {
  usePythonItself();
  const outDir = resolve(import.meta.dirname, "../../node_modules/.cache/svc-test-cli", String(process.pid));
  await build({ ...javascript, config: false, outDir, clean: true, logLevel: "silent" });
  process.env.SVC_BUILT_CLI = join(outDir, "cli.mjs");
  return () => rm(outDir, { recursive: true, force: true });
}

function usePythonItself(): void {
  const path = process.env.PATH ?? "";
  const onPath = path
    .split(delimiter)
    .map((dir) => join(dir, "python3"))
    .find((file) => existsSync(file));
  if (!onPath) return;
  let executable: string;
  try {
    executable = execFileSync(onPath, ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).trim();
  } catch {
    return; // no working python3: the tests that need one say so
  }
  if (executable === onPath || !existsSync(executable)) return;
  process.env.PATH = `${dirname(executable)}${delimiter}${path}`;
}
