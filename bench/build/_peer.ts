/**
 * The peer tool for bench/build: `flash build` of PyPI `runpod-flash` (1.21), installed into a venv
 * created by the bench run. Its app is the `svc init` template with `from runpod_flash import`
 * instead of `from svc import` (the same Endpoint keywords: a GPU queue, a CPU queue and a
 * load-balanced endpoint) and the same requirements.txt. flash imports the app's modules to find
 * them (its RuntimeScanner) and installs requirements with pip on every build. Installed on first
 * use into a venv under the temp folder (PEER_VENV), reused by later runs.
 */
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { TEMPLATE_DIR } from "../../cli/commands/init.ts";

export const PEER_PACKAGE = "runpod-flash==1.21.0";

export interface CommandResult {
  code: number | null;
  wallMs: number;
  /** User + system CPU of the command and the children it waited for (GNU time), when /usr/bin/time exists. */
  cpuMs?: number;
  /** The last lines of stdout + stderr. */
  tail: string;
}

const GNU_TIME = "/usr/bin/time";

/** Runs a command to its end; wall time always, CPU time through GNU time where it is installed (less disturbed by other load). */
export function timeCommand(command: string, argv: string[], cwd: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 600_000): Promise<CommandResult> {
  const cpuFile = existsSync(GNU_TIME) ? join(mkdtempSync(join(tmpdir(), "svc-bench-time-")), "cpu") : undefined;
  const [program, args] = cpuFile ? [GNU_TIME, ["-f", "%U %S", "-o", cpuFile, command, ...argv]] : [command, argv];
  const cpuMs = () => {
    if (!cpuFile || !existsSync(cpuFile)) return undefined;
    const [user, system] = readFileSync(cpuFile, "utf8").trim().split("\n").pop()!.split(" ").map(Number);
    rmSync(dirname(cpuFile), { recursive: true, force: true });
    return ((user ?? 0) + (system ?? 0)) * 1000;
  };
  return new Promise((resolvePromise) => {
    const started = performance.now();
    const child = spawn(program, args, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"], timeout: timeoutMs });
    let output = "";
    const collect = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-8000);
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    child.on("error", (error) => resolvePromise({ code: -1, wallMs: performance.now() - started, tail: String(error) }));
    child.on("close", (code) =>
      resolvePromise({ code, wallMs: performance.now() - started, cpuMs: cpuMs(), tail: output.trim().split("\n").slice(-12).join("\n") }),
    );
  });
}

/** Where the peer is installed on first use, and reused by later runs (as bench/platform's peer). */
export const PEER_VENV = join(tmpdir(), `svc-bench-peer-${PEER_PACKAGE.replace("==", "-")}`);

/** Creates the venv and installs the peer unless a run did before; answers the `flash` executable, or why it could not. */
export async function installPeer(venv = PEER_VENV, python = "python3"): Promise<{ flash: string } | { reason: string }> {
  const flash = join(venv, "bin", "flash");
  if (existsSync(join(venv, ".installed"))) return { flash };
  process.stderr.write(`installing ${PEER_PACKAGE} into ${venv} (once) …\n`);
  rmSync(venv, { recursive: true, force: true });
  const created = await timeCommand(python, ["-m", "venv", venv], ".");
  if (created.code !== 0) return { reason: `could not create a venv with ${python}: ${created.tail}` };
  const pip = await timeCommand(join(venv, "bin", "python"), ["-m", "pip", "install", "--disable-pip-version-check", "-q", PEER_PACKAGE], ".");
  if (pip.code !== 0) return { reason: `pip install ${PEER_PACKAGE} failed (it needs PyPI): ${pip.tail}` };
  writeFileSync(join(venv, ".installed"), PEER_PACKAGE);
  return { flash };
}

/** The svc init template rewritten for flash, with the given requirements. */
export function writePeerApp(dir: string, requirements: string): void {
  cpSync(join(TEMPLATE_DIR, "workers"), join(dir, "workers"), { recursive: true, filter: (source) => !source.includes("__pycache__") });
  for (const name of readdirSync(join(dir, "workers"))) {
    const file = join(dir, "workers", name);
    if (name.endsWith(".py")) writeFileSync(file, readFileSync(file, "utf8").replace(/from svc import/g, "from runpod_flash import"));
  }
  writeFileSync(join(dir, "requirements.txt"), requirements);
  const gitignore = join(TEMPLATE_DIR, "_gitignore");
  if (existsSync(gitignore)) cpSync(gitignore, join(dir, ".gitignore"));
}
