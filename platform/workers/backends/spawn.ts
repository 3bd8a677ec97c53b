/**
 * Starts a worker's launch (../image-env.ts WorkerLaunch): the one place a worker's process is
 * spawned, used by the backends only (the local backend here, the launcher on a Ray node);
 * test/core/layers.test.ts holds every other file to that. bwrap gets its seccomp program on fd 4
 * (../sandbox.ts); a shell's stdin is a pipe. `prefix` (the sandbox only) runs first and execs bwrap:
 * it puts the process in the worker's cgroup (../worker-resources.ts).
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { WorkerLaunch } from "../image-env.ts";
import { spawnBwrap } from "../sandbox.ts";

export function spawnLaunch(launch: WorkerLaunch, { stdin = false, prefix }: { stdin?: boolean; prefix?: string[] } = {}): ChildProcess {
  if (launch.sandboxed) return spawnBwrap(launch.args, { cwd: launch.cwd, env: launch.env, infoFd: true, stdin, prefix, netns: launch.channel?.netns?.path });
  return spawn(launch.command, launch.args, {
    cwd: launch.cwd,
    env: launch.env,
    stdio: [stdin ? "pipe" : "ignore", "pipe", "pipe"],
    uid: launch.user?.uid,
    gid: launch.user?.gid,
  });
}
