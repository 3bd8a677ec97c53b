/**
 * A sandboxed worker's network namespace where the platform runs as root: made before the worker
 * (`ip netns add`, owned by the host's user namespace, so the worker, in a user namespace of its own
 * with no capability, cannot change its routes), with its loopback up, and its egress (input URLs,
 * model hubs) by slirp4netns user-mode networking: `--disable-host-loopback` closes slirp's gateway
 * to the host's loopback, and a `prohibit` route per address of the host's own (taken when the
 * worker starts) closes those. bwrap runs inside it (nsenter). An endpoint with `network=False`
 * gets the namespace without slirp4netns. Elsewhere (no root, or no slirp4netns) bwrap makes the
 * namespace (--unshare-net) and the worker has no egress, which the platform says once.
 * docs/platform.md, "Threat model".
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { runCommand } from "./command-runner.ts";

const READY_TIMEOUT_MS = 10_000;

export interface WorkerNetns {
  name: string;
  /** What nsenter --net takes. */
  path: string;
  /** slirp4netns, while the worker has egress. */
  slirp?: ChildProcess;
}

let available: Promise<boolean> | undefined;

/**
 * Can the platform make namespaces with egress here (root, `ip`, slirp4netns)? Checked once per
 * process; where it can, the namespaces a dead platform left behind are removed first.
 */
export function egressAvailable(): Promise<boolean> {
  available ??=
    process.getuid?.() !== 0
      ? Promise.resolve(false)
      : runCommand("slirp4netns", ["--version"])
          .then(() => runCommand("ip", ["-V"]))
          .then(() => removeOrphanNetns())
          .then(
            () => true,
            () => false,
          );
  return available;
}

/** The host's own addresses (IPv4: slirp4netns gives the worker no IPv6); the namespace's loopback is its own. */
const hostAddresses = () =>
  Object.values(networkInterfaces())
    .flat()
    .filter((a) => a?.family === "IPv4" && !a.internal)
    .map((a) => a!.address);

/** slirp4netns on the namespace, once it says it is ready. */
async function startSlirp(path: string): Promise<ChildProcess> {
  // fd 4 (--exit-fd) is a pipe only this process holds: if the platform dies (kill -9), the pipe
  // closes and slirp4netns exits with it instead of outliving it.
  const slirp = spawn(
    "slirp4netns",
    ["--configure", "--mtu=65520", "--disable-host-loopback", "--ready-fd=3", "--exit-fd=4", "--netns-type=path", path, "tap0"],
    {
      stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"],
    },
  );
  let err = "";
  slirp.stderr!.on("data", (d: Buffer) => (err = (err + d).slice(-2000)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`slirp4netns was not ready in ${READY_TIMEOUT_MS / 1000} s`)), READY_TIMEOUT_MS);
    const done = (error?: Error) => {
      clearTimeout(timer);
      if (error) {
        slirp.kill("SIGKILL");
        reject(error);
      } else resolve();
    };
    (slirp.stdio[3] as NodeJS.ReadableStream).once("data", () => done());
    slirp.once("error", done);
    slirp.once("exit", (code) => done(new Error(`slirp4netns exited ${code}: ${err.trim()}`)));
  });
  return slirp;
}

/** A namespace named `svc-<id>`, with egress unless `egress` is false. */
export async function createNetns(id: string, egress: boolean): Promise<WorkerNetns> {
  const name = `svc-${id}`;
  const netns: WorkerNetns = { name, path: `/run/netns/${name}` };
  await runCommand("ip", ["netns", "add", name]);
  try {
    await runCommand("ip", ["-n", name, "link", "set", "lo", "up"]);
    if (egress) {
      netns.slirp = await startSlirp(netns.path);
      const routes = hostAddresses().map((address) => `route add prohibit ${address}/32`);
      if (routes.length) await runCommand("ip", ["-n", name, "-batch", "-"], `${routes.join("\n")}\n`);
    }
    return netns;
  } catch (error) {
    await removeNetns(netns);
    throw error;
  }
}

/** The worker exited: its egress stops and its namespace goes. */
export async function removeNetns(netns: WorkerNetns): Promise<void> {
  netns.slirp?.kill();
  await runCommand("ip", ["netns", "del", netns.name]).catch(() => undefined);
}

/**
 * Namespaces a platform that died (kill -9) left behind: `svc-<pid>-…` whose pid no longer runs.
 * Their slirp4netns went with that platform (--exit-fd); the names stay until removed.
 */
export async function removeOrphanNetns(): Promise<void> {
  let names: string[];
  try {
    names = readdirSync("/run/netns");
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^svc-(\d+)-/.exec(name)?.[1]);
    if (pid && pid !== process.pid && !pidRuns(pid)) await runCommand("ip", ["netns", "del", name]).catch(() => undefined);
  }
}

function pidRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** How long after a start the next namespace is made: off the starting worker's way (2 CPUs here). */
const SPARE_DELAY_MS = 500;

/**
 * One namespace of each kind made ahead, once workers have asked for one: a worker's cold start
 * takes it at once instead of waiting for `ip netns add` and slirp4netns (tens of ms), and the next
 * one is made a moment later. Its prohibit routes are the host's addresses when it was made.
 */
export class NetnsPool {
  private readonly spare = new Map<boolean, WorkerNetns>();
  private readonly making = new Map<boolean, Promise<void>>();
  /** Ends a refill's wait at once (close): its timer is unref'd, so a wait left pending would hold close() forever once nothing else keeps the process alive. */
  private readonly skipWait = new Map<boolean, () => void>();
  private closed = false;
  private made = 0;

  constructor(private readonly prefix: string) {}

  /** A namespace for a worker: the spare one (claimed at once: two starts never share it) or a new one. */
  take(egress: boolean): Promise<WorkerNetns> {
    const ready = this.spare.get(egress);
    this.spare.delete(egress);
    this.refill(egress);
    return ready ? Promise.resolve(ready) : this.make(egress);
  }

  private make(egress: boolean): Promise<WorkerNetns> {
    return createNetns(`${this.prefix}-${this.made++}`, egress);
  }

  private refill(egress: boolean): void {
    if (this.closed || this.making.has(egress)) return;
    const making = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, SPARE_DELAY_MS).unref();
      this.skipWait.set(egress, () => {
        clearTimeout(timer);
        resolve();
      });
    })
      .then(() => (this.closed ? undefined : this.make(egress)))
      .then((netns) => {
        if (!netns) return;
        if (this.closed || this.spare.has(egress)) return removeNetns(netns);
        this.spare.set(egress, netns);
      })
      .catch(() => undefined)
      .finally(() => {
        this.making.delete(egress);
        this.skipWait.delete(egress);
      });
    this.making.set(egress, making);
  }

  /** The platform closes: the spare namespaces go, and any being made. */
  async close(): Promise<void> {
    this.closed = true;
    for (const skip of this.skipWait.values()) skip();
    await Promise.all(this.making.values());
    for (const netns of this.spare.values()) await removeNetns(netns);
    this.spare.clear();
  }
}
