/**
 * Once before the suite (vitest.config.ts `globalSetup`): when `python3` on PATH is a version
 * manager's shim rather than the interpreter (pyenv's is a bash script that runs several programs to
 * pick the version), the interpreter's own folder goes first on PATH for every test file. Each of the
 * suite's hundreds of Python starts (workers, the build's helper, pip, uv, Ray) then skips the shim:
 * about 0.1 s of CPU and 0.3 s each on CI's machine. The interpreter, and the pip and ray beside it,
 * are those the shim would have run, so nothing a test checks changes; where python3 is the
 * interpreter itself (Debian's /usr/bin/python3) PATH is left alone.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";

export default function setup(): void {
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
