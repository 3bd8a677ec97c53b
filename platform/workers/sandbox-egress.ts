/**
 * A sandboxed worker's egress (input URLs, model hubs): user-mode networking by slirp4netns on the
 * worker's own network namespace (./worker-channel.ts), with no way to the host. `--disable-host-loopback`
 * closes slirp's gateway to the host's loopback, and a `prohibit` route per address of the host's
 * own (taken when the worker starts) closes those; the worker has no capability to change its routes.
 * The worker waits (bwrap --block-fd) until this is in place. Where slirp4netns is missing, the worker
 * has no network but the channel, and the platform says so once. An endpoint with `network=False`
 * gets no egress at all. docs/platform.md, "Threat model".
 */
import { spawn, type ChildProcess } from "node:child_process";
import { networkInterfaces } from "node:os";

/** The fd bwrap waits on (--block-fd) before it runs the worker; 3 is its info fd, 4 the seccomp program's. */
export const EGRESS_BLOCK_FD = 5;
const READY_TIMEOUT_MS = 10_000;

let available: Promise<boolean> | undefined;

/** Is slirp4netns installed here? Checked once per process. */
export function egressAvailable(): Promise<boolean> {
  available ??= new Promise((resolve) => {
    const proc = spawn("slirp4netns", ["--version"], { stdio: "ignore" });
    proc.on("error", () => resolve(false));
    proc.on("exit", (code) => resolve(code === 0));
  });
  return available;
}

/** The host's own addresses (IPv4: slirp4netns gives the worker no IPv6), loopback's included. */
const hostAddresses = () =>
  Object.values(networkInterfaces())
    .flat()
    .filter((a) => a?.family === "IPv4" && !a.internal) // the namespace's own loopback is its own
    .map((a) => a!.address);

/** Runs `command` to its end; rejects with its output on failure. */
function run(command: string, args: string[], input?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const proc = spawn(command, args, { stdio: [input === undefined ? "ignore" : "pipe", "ignore", "pipe"] });
    let err = "";
    proc.stderr!.on("data", (d: Buffer) => (err += d));
    proc.on("error", reject);
    proc.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}: ${err.trim()}`))));
    if (input !== undefined) proc.stdin!.end(input);
  });
}

/**
 * Gives the namespace of the sandbox's process `pid` its egress: slirp4netns on a tap device, then
 * the host's addresses made unreachable. Answers slirp4netns's process (it lives as long as the worker).
 */
export async function connectEgress(pid: number): Promise<ChildProcess> {
  const userns = process.getuid?.() === 0 ? [] : [`--userns-path=/proc/${pid}/ns/user`];
  const slirp = spawn("slirp4netns", ["--configure", "--mtu=65520", "--disable-host-loopback", "--ready-fd=3", ...userns, String(pid), "tap0"], {
    stdio: ["ignore", "ignore", "pipe", "pipe"],
  });
  let err = "";
  slirp.stderr!.on("data", (d: Buffer) => (err = (err + d).slice(-2000)));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`slirp4netns was not ready in ${READY_TIMEOUT_MS / 1000} s`)), READY_TIMEOUT_MS);
      (slirp.stdio[3] as NodeJS.ReadableStream).once("data", () => (clearTimeout(timer), resolve()));
      slirp.once("error", (e) => (clearTimeout(timer), reject(e)));
      slirp.once("exit", (code) => (clearTimeout(timer), reject(new Error(`slirp4netns exited ${code}: ${err.trim()}`))));
    });
    const routes = hostAddresses().map((address) => `route add prohibit ${address}/32`).join("\n");
    await run("nsenter", [`--net=/proc/${pid}/ns/net`, ...(userns.length ? [`--user=/proc/${pid}/ns/user`] : []), "ip", "-batch", "-"], `${routes}\n`);
    return slirp;
  } catch (error) {
    slirp.kill("SIGKILL");
    throw error;
  }
}

/** Lets the worker run (bwrap waits on EGRESS_BLOCK_FD until it reads). */
export function releaseWorker(proc: ChildProcess): void {
  const fd = (proc.stdio as unknown[])[EGRESS_BLOCK_FD] as NodeJS.WritableStream | null | undefined;
  if (!fd) return;
  fd.on("error", () => undefined); // bwrap gone: its exit says why
  fd.end("1");
}
