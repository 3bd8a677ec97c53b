/**
 * The bubblewrap (`bwrap`) sandbox of a worker: a filesystem that holds the system's programs and
 * libraries, the interpreter's stdlib with its site folders emptied but for the image's packages
 * (at their own paths: their relative links keep working) and the unpacked build (all read-only),
 * the image's own minimal /etc (./sandbox-etc.ts), a private /tmp, its own /proc (pid namespace: no
 * view of the platform's process or of other workers), and its own network namespace with one channel
 * to the platform (./worker-channel.ts), the kernel's knobs in /proc and /sys masked or read-only
 * (./sandbox-masks.ts). A platform run as root runs bwrap as root (it binds what only root reaches:
 * the state folder, an interpreter under /root) and the worker as its app's host user (./uid-pool.ts):
 * `setpriv` drops to it, with every capability and the bounding set gone, before the worker's first
 * instruction. No capabilities, no_new_privs, and a seccomp filter (./seccomp.ts) that refuses what
 * would undo the walls (mount, handle-based opens, ptrace, new namespaces, ...). No view of the
 * platform's state folder or of other builds. docs/platform.md, "Image environments" and "Threat model".
 */
import { spawn } from "node:child_process";
import { existsSync, lstatSync, readlinkSync } from "node:fs";
import { seccompProgram } from "./seccomp.ts";
import { kernelMaskArgs, sysMaskArgs } from "./sandbox-masks.ts";
import type { WorkerUser } from "./uid-pool.ts";

/** Where the build appears inside the sandbox (the worker's working directory). */
export const SANDBOX_APP_DIR = "/app";
/** Where a warm spare sees the platform's compiled copy of the svc runtime (./backends/spare-bootstrap.ts). */
export const SANDBOX_RUNTIME_DIR = "/svc-runtime";

/** Top-level system folders shown as they are (a symlink stays a symlink: merged /usr). /etc is the sandbox's own. */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/** The host user a worker of a platform run as root runs as (its app's, ./uid-pool.ts); none: the platform's own user. */
export type SandboxUser = WorkerUser;

/** The user a probe sandbox drops to where the platform runs as root (`nobody`: any unprivileged user shows the same). */
export const probeUser = (): SandboxUser | undefined => (process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined);

/**
 * `command` run as `user`: setpriv (in the sandbox's /usr) takes the ids and clears the supplementary
 * groups, the inheritable capabilities and the bounding set; the change of uid from 0 empties the
 * rest. Under no_new_privs nothing gives them back.
 */
export const asUser = (user: SandboxUser | undefined, command: string[]): string[] =>
  user ? ["setpriv", `--reuid=${user.uid}`, `--regid=${user.gid}`, "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--", ...command] : command;

/**
 * bwrap's options that take the worker's privileges away (and where the seccomp program arrives: `fd`).
 * With a `user`, bwrap keeps only what setpriv needs to become that user (`asUser`).
 * No `--new-session`: a session of its own is a scheduling group of its own where the kernel groups
 * by session (autogroup, on by default), and every worker in one cost runsync a quarter of its
 * throughput at 32 clients (issue 28). What the session kept away, the terminal, stays away without
 * it: the filter refuses TIOCSTI/TIOCLINUX and `/dev/tty` is not there (NO_TERMINAL_ARGS).
 */
export function hardeningArgs(user: SandboxUser | undefined, seccompFd: number | undefined): string[] {
  const args = ["--cap-drop", "ALL"];
  if (user) args.push("--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP");
  if (seccompFd !== undefined) args.push("--seccomp", String(seccompFd));
  return args;
}

/**
 * Spawns bwrap with `args`; the seccomp program, if any, is written to its fd 4 (fd 3 is its info
 * fd). `prefix` runs first and execs bwrap (./worker-resources.ts: joining the worker's cgroup); in a
 * network namespace the platform made (./sandbox-egress.ts), nsenter joins it and execs bwrap.
 */
export function spawnBwrap(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; infoFd: boolean; stdin?: boolean; prefix?: string[]; netns?: string },
) {
  const filter = seccompProgram();
  const netns = options.netns ? ["nsenter", `--net=${options.netns}`, "--"] : [];
  const [command, ...before] = [...(options.prefix ?? []), ...netns, "bwrap"];
  const proc = spawn(command!, [...before, ...args], {
    cwd: options.cwd,
    env: options.env,
    stdio: [options.stdin ? "pipe" : "ignore", "pipe", "pipe", options.infoFd ? "pipe" : "ignore", filter ? "pipe" : "ignore"],
  });
  const sink = proc.stdio[4] as NodeJS.WritableStream | null;
  if (filter && sink) {
    sink.on("error", () => undefined); // bwrap gone before it read the program: its exit says why
    sink.end(filter);
  }
  return proc;
}

/** After `--dev /dev`: the platform's controlling terminal (the one `svc platform start` in the foreground holds) is not reachable by name. */
export const NO_TERMINAL_ARGS = ["--ro-bind", "/dev/null", "/dev/tty"];

/** fd 4 when there is a program to install (x86_64), else none. */
export const SECCOMP_FD = seccompProgram() ? 4 : undefined;

let usable: Promise<boolean> | undefined;

/** Can bwrap build the hardened sandbox here (installed, namespaces allowed)? Checked once per process. */
export function bwrapUsable(user: SandboxUser | undefined = probeUser()): Promise<boolean> {
  usable ??= probeBwrap(user, ["--unshare-pid", "--as-pid-1"]);
  return usable;
}

/** Does bwrap run the hardened sandbox with `namespaces` (running `true` over a read-only `/`) to a clean exit within 10 s? */
export function probeBwrap(user: SandboxUser | undefined, namespaces: string[]): Promise<boolean> {
  const args = [
    "--die-with-parent",
    ...hardeningArgs(user, SECCOMP_FD),
    ...namespaces,
    "--ro-bind",
    "/",
    "/",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    ...asUser(user, ["true"]),
  ];
  return new Promise((resolve) => {
    const proc = spawnBwrap(args, { infoFd: false });
    const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
    proc.on("error", () => resolve(false));
    proc.on("exit", (code) => {
      clearTimeout(timer);
      resolve(code === 0);
    });
  });
}

export interface SandboxSpec {
  /** Interpreter install folders outside the system folders (pyenv, a venv's base). */
  prefixes: string[];
  /** Folders to show empty (the interpreter's site folders)... */
  hidden: string[];
  /** ...but for these entries of theirs (the image's packages). */
  packages: string[];
  buildDir: string;
  /** A warm spare's: the platform's svc runtime with its .pyc (./backends/runtime-bytecode.ts), read-only at SANDBOX_RUNTIME_DIR. */
  runtimeDir?: string;
  /** The sandbox's /etc (./sandbox-etc.ts) and the host entries bound into it. */
  etc: { dir: string; binds: string[] };
  /** The host user the worker runs as (a platform run as root: its app's). */
  user?: SandboxUser;
  /** The endpoint's network volume's folder, bound read-write at /platform-volume (docs/volumes.md). */
  volumeDir?: string;
  /** The command run inside, relative to SANDBOX_APP_DIR. */
  command: string[];
  /** The worker's GPUs (./gpu-assign.ts): device nodes to `--dev-bind`, driver library folders to show read-only. */
  gpu?: { devices: string[]; libraryDirs: string[] };
  /** The size of its /tmp tmpfs (./flavours.ts); the kernel's default, half the host's RAM, when not given. */
  tmpBytes?: number;
  /** Its own network namespace and the platform's channel (./worker-channel.ts channelArgs). */
  network?: string[];
}

const isUnder = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`);

/**
 * The folders above a bind's mount point that the system folders do not show, made traversable
 * (0755) before bwrap makes them itself with the host's modes: the worker's user must reach an
 * interpreter under /root (0700 on the host).
 */
function openParents(path: string, shown: string[], made: Set<string>): string[] {
  const args: string[] = [];
  const parts = path.split("/").filter(Boolean);
  for (let i = 1; i < parts.length; i++) {
    const dir = `/${parts.slice(0, i).join("/")}`;
    if (made.has(dir) || shown.some((s) => isUnder(dir, s))) continue;
    made.add(dir);
    args.push("--perms", "0755", "--dir", dir);
  }
  return args;
}

/** bwrap's arguments; fd 3 receives `{"child-pid": N}` (the pid to signal: bwrap does not forward signals). */
export function bwrapArgs(spec: SandboxSpec): string[] {
  const args = [
    "--die-with-parent",
    ...hardeningArgs(spec.user, SECCOMP_FD),
    "--unshare-pid",
    "--as-pid-1",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--info-fd",
    "3",
  ];
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
  args.push("--ro-bind", spec.etc.dir, "/etc");
  for (const entry of spec.etc.binds) args.push("--ro-bind", entry, entry);
  const made = new Set<string>();
  for (const prefix of spec.prefixes) {
    if (shown.some((dir) => isUnder(prefix, dir)) || !existsSync(prefix)) continue;
    args.push(...openParents(prefix, shown, made), "--ro-bind", prefix, prefix);
    shown.push(prefix);
  }
  const hidden = spec.hidden.filter((dir) => existsSync(dir) && shown.some((s) => isUnder(dir, s)));
  for (const dir of hidden) args.push("--tmpfs", dir);
  for (const entry of spec.packages) args.push("--ro-bind", entry, entry);
  for (const dir of hidden) args.push("--remount-ro", dir); // after the binds: their mount points are made in the tmpfs
  args.push("--ro-bind", spec.buildDir, SANDBOX_APP_DIR);
  if (spec.runtimeDir) args.push("--ro-bind", spec.runtimeDir, SANDBOX_RUNTIME_DIR);
  if (spec.tmpBytes) args.push("--size", String(spec.tmpBytes));
  args.push("--perms", "1777", "--tmpfs", "/tmp", "--proc", "/proc", ...kernelMaskArgs(), "--dev", "/dev", ...NO_TERMINAL_ARGS);
  // POSIX shared memory (multiprocessing's Value, Lock, Queue) for the pool user, bounded like /tmp: bwrap's /dev/shm is root's.
  if (spec.tmpBytes) args.push("--size", String(spec.tmpBytes));
  args.push("--perms", "1777", "--tmpfs", "/dev/shm");
  if (spec.gpu) args.push(...gpuArgs(spec.gpu, shown, made));
  if (spec.volumeDir) args.push("--bind", spec.volumeDir, "/platform-volume");
  if (spec.network) args.push(...spec.network);
  args.push("--remount-ro", "/"); // the sandbox's own root (a tmpfs bwrap made): nothing new appears in it
  args.push("--chdir", SANDBOX_APP_DIR, "--", ...asUser(spec.user, spec.command));
  return args;
}

/**
 * The worker's GPUs: their device nodes and the driver's control nodes, bound over the sandbox's
 * minimal /dev (so after `--dev`; a plain bind there is nodev), the driver's library folders the
 * system folders do not show, and /sys read-only (as a container has it): without /sys, cuInit fails
 * with CUDA_ERROR_OPERATING_SYSTEM even with the nodes bound (docs/platform.md, "GPUs").
 */
function gpuArgs(gpu: NonNullable<SandboxSpec["gpu"]>, shown: string[], made: Set<string>): string[] {
  const args: string[] = existsSync("/sys") ? ["--ro-bind", "/sys", "/sys", ...sysMaskArgs()] : [];
  for (const node of gpu.devices) args.push("--dev-bind", node, node);
  for (const dir of gpu.libraryDirs)
    if (!shown.some((s) => isUnder(dir, s)) && existsSync(dir)) args.push(...openParents(dir, shown, made), "--ro-bind", dir, dir);
  return args;
}
