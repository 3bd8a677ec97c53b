/**
 * The bubblewrap (`bwrap`) sandbox of a worker: a filesystem that holds the system's programs and
 * libraries, the interpreter's stdlib with its site folders emptied but for the image's packages
 * (at their own paths: their relative links keep working) and the unpacked build (all read-only), a private /tmp, its own /proc (pid namespace: no view of the
 * platform's process or of other workers), and the host's network (the platform is on loopback).
 * No view of the platform's state folder or of other builds. docs/platform.md, "Image environments".
 */
import { execFile } from "node:child_process";
import { existsSync, lstatSync, readlinkSync } from "node:fs";

/** Where the build appears inside the sandbox (the worker's working directory). */
export const SANDBOX_APP_DIR = "/app";

/** Top-level system folders shown as they are (a symlink stays a symlink: merged /usr). */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"];

let usable: Promise<boolean> | undefined;

/** Can bwrap build a sandbox here (installed, namespaces allowed)? Checked once per process. */
export function bwrapUsable(): Promise<boolean> {
  usable ??= new Promise((resolve) =>
    execFile("bwrap", ["--die-with-parent", "--unshare-pid", "--as-pid-1", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"], { timeout: 10_000 }, (error) =>
      resolve(!error),
    ),
  );
  return usable;
}

export interface SandboxSpec {
  /** Interpreter install folders outside the system folders (pyenv, a venv's base). */
  prefixes: string[];
  /** Folders to show empty (the interpreter's site folders)... */
  hidden: string[];
  /** ...but for these entries of theirs (the image's packages). */
  packages: string[];
  buildDir: string;
  /** The command run inside, relative to SANDBOX_APP_DIR. */
  command: string[];
}

const isUnder = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`);

/** bwrap's arguments; fd 3 receives `{"child-pid": N}` (the pid to signal: bwrap does not forward signals). */
export function bwrapArgs(spec: SandboxSpec): string[] {
  const args = ["--die-with-parent", "--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--info-fd", "3"];
  const shown: string[] = [];
  for (const dir of SYSTEM_DIRS) {
    if (!existsSync(dir)) continue;
    const stat = lstatSync(dir);
    if (stat.isSymbolicLink()) args.push("--symlink", readlinkSync(dir), dir);
    else {
      args.push("--ro-bind", dir, dir);
      shown.push(dir);
    }
  }
  for (const prefix of spec.prefixes) {
    if (shown.some((dir) => isUnder(prefix, dir)) || !existsSync(prefix)) continue;
    args.push("--ro-bind", prefix, prefix);
    shown.push(prefix);
  }
  const hidden = spec.hidden.filter((dir) => existsSync(dir) && shown.some((s) => isUnder(dir, s)));
  for (const dir of hidden) args.push("--tmpfs", dir);
  for (const entry of spec.packages) args.push("--ro-bind", entry, entry);
  for (const dir of hidden) args.push("--remount-ro", dir); // after the binds: their mount points are made in the tmpfs
  args.push("--ro-bind", spec.buildDir, SANDBOX_APP_DIR);
  args.push("--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev", "--chdir", SANDBOX_APP_DIR, "--", ...spec.command);
  return args;
}
