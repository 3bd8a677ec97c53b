/**
 * A sandboxed worker's network: its own network namespace (bwrap --unshare-net: a loopback of its
 * own, no view of the host's, of the platform's TCP port or of other workers' listeners), and one
 * channel to the platform, a Unix socket bound into the sandbox. The runtime sends its requests for
 * the platform's address there (SVC_PLATFORM_SOCKET) and relays that address's TCP port inside the
 * namespace to it (SVC_PLATFORM_RELAY: what the user's own clients, boto3 on the volume's S3 API or
 * urllib on PLATFORM_API_URL, connect to). A load-balanced worker listens on a Unix socket in its own
 * folder of `<state>/run/` (SVC_LB_SOCKET), which only the platform's proxy reaches: the folder is
 * the platform's and no other sandbox shows it. Under `svc run` a build's endpoint URLs may name the
 * dev server (a loopback port of the host): for those ports only, the platform listens on a socket in
 * the worker's folder and connects it to the host's port (a tunnel), and the runtime relays that port
 * inside the namespace too. Only a holder of the platform's own key records a build's URLs.
 * docs/platform.md, "Threat model".
 */
import { randomBytes } from "node:crypto";
import { chownSync, mkdirSync, symlinkSync, unlinkSync } from "node:fs";
import { chown, mkdir, rm } from "node:fs/promises";
import { connect, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { removeNetns, type WorkerNetns } from "./sandbox-egress.ts";
import { probeBwrap, probeUser, type SandboxUser } from "./sandbox.ts";

/** Where the channel appears inside the sandbox. */
export const SANDBOX_PLATFORM_SOCKET = "/run/svc/platform.sock";
const SANDBOX_WORKER_DIR = "/run/svc/worker";
const SANDBOX_LB_SOCKET = `${SANDBOX_WORKER_DIR}/lb.sock`;
/** A Unix socket's path is at most 107 bytes (sun_path); longer state folders keep workers on TCP. */
const MAX_SOCKET_PATH = 107;

/** The platform's socket and workers' folders: `<state>/run/` (only the platform's user enters it). */
export function runDir(dataDir: string): string {
  const dir = join(dataDir, "run");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** The platform's worker socket, or undefined where its path would be too long for a Unix socket. */
export function platformSocketPath(dataDir: string): string | undefined {
  const path = join(dataDir, "run", "platform.sock");
  return Buffer.byteLength(path) <= MAX_SOCKET_PATH - 20 ? path : undefined; // room for a worker folder's lb.sock beside it
}

export interface WorkerChannel {
  /** The platform's socket (host path), bound at SANDBOX_PLATFORM_SOCKET. */
  platformSocket: string;
  /** The worker's own folder (host path), bound at SANDBOX_WORKER_DIR. */
  workerDir: string;
  /** Where a load-balanced worker listens (host path). */
  lbSocket: string;
  /** The host's loopback ports tunnelled in (the dev server's), each listened for in the worker's folder. */
  tunnels: Array<{ port: number; server: Server }>;
  /** The namespace the platform made (./sandbox-egress.ts: egress where it can be had); none: bwrap makes one (--unshare-net). */
  netns?: WorkerNetns;
}

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);
const tunnelName = (port: number) => `tunnel-${port}.sock`;

/** The host's loopback ports that a build's endpoint URLs name, other than the platform's own (`svc run`'s dev server). */
export function loopbackPorts(urls: unknown, apiBase: string): number[] {
  const own = new URL(apiBase).port;
  const ports = new Set<number>();
  for (const raw of Object.values((urls ?? {}) as Record<string, unknown>)) {
    const url = typeof raw === "string" && URL.canParse(raw) ? new URL(raw) : undefined;
    if (url?.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname) && url.port && url.port !== own) ports.add(Number(url.port));
  }
  return [...ports];
}

/**
 * Makes the worker's folder beside the platform's socket, with a tunnel socket per port of
 * `tunnelPorts`; a worker run as `user` owns the folder and its tunnels (it listens and connects there).
 */
export async function openChannel(
  platformSocket: string,
  workerId: string,
  tunnelPorts: number[],
  netns: WorkerNetns | undefined,
  user?: SandboxUser,
): Promise<WorkerChannel> {
  const workerDir = join(platformSocket, "..", "w", workerId);
  await mkdir(workerDir, { recursive: true, mode: 0o700 });
  if (user) await chown(workerDir, user.uid, user.gid);
  const channel: WorkerChannel = { platformSocket, workerDir, lbSocket: join(workerDir, "lb.sock"), tunnels: [], netns };
  await addTunnels(channel, tunnelPorts, user);
  return channel;
}

/**
 * Tunnels for `ports` in the worker's folder (bound live into its sandbox: a warm spare, ./backends/warm-spares.ts,
 * gets its build's tunnels when it is told to go), owned by the worker's user.
 */
export async function addTunnels(channel: WorkerChannel, ports: number[], user?: SandboxUser): Promise<void> {
  const added = await Promise.all(ports.map(async (port) => ({ port, server: await listenTunnel(join(channel.workerDir, tunnelName(port)), port) })));
  channel.tunnels.push(...added);
  if (user) for (const t of added) chownSync(join(channel.workerDir, tunnelName(t.port)), user.uid, user.gid);
}

/**
 * `server` listens on the Unix socket `path`, bound through a link of a random name that is gone
 * once it listens. A socket's address is the path given to bind, and the connections a worker
 * makes are listed in its own network namespace's /proc/net/unix with it: the worker reads a name
 * that no longer exists, not the platform's state folder.
 */
export async function listenUnix(server: Server, path: string): Promise<void> {
  const alias = join(tmpdir(), `svc-${randomBytes(8).toString("hex")}`);
  symlinkSync(dirname(path), alias); // synchronous, as the unlink: a claimed spare waits on its tunnels
  try {
    await new Promise<void>((resolve, reject) => server.once("error", reject).listen({ path: join(alias, basename(path)) }, () => resolve()));
  } finally {
    unlinkSync(alias);
  }
}

/** Connections to `path` go on to the host's 127.0.0.1:`port`. */
async function listenTunnel(path: string, port: number): Promise<Server> {
  const server = createServer((inside) => {
    const outside = connect(port, "127.0.0.1");
    inside.pipe(outside).pipe(inside);
    inside.on("error", () => outside.destroy());
    outside.on("error", () => inside.destroy());
  });
  await listenUnix(server, path);
  return server;
}

/** The worker exited: its tunnels close and its folder goes. */
export async function closeChannel(channel: WorkerChannel): Promise<void> {
  for (const t of channel.tunnels) t.server.close();
  if (channel.netns) await removeNetns(channel.netns);
  await rm(channel.workerDir, { recursive: true, force: true });
}

/** bwrap's options: the namespace (unless the platform made it) and the channel's two binds, under folders the worker's user may enter. */
export const channelArgs = (channel: WorkerChannel): string[] => [
  ...(channel.netns ? [] : ["--unshare-net"]),
  ...["/run", "/run/svc"].flatMap((dir) => ["--perms", "0755", "--dir", dir]),
  "--bind",
  channel.platformSocket,
  SANDBOX_PLATFORM_SOCKET,
  "--bind",
  channel.workerDir,
  SANDBOX_WORKER_DIR,
];

/**
 * The runtime's variables for the channel: the socket, what to relay inside the namespace
 * (`host:port=socket`, `;`-separated: the platform's port, then the tunnels) and an LB worker's socket.
 */
export function channelEnv(channel: WorkerChannel, apiBase: string, lb: boolean): NodeJS.ProcessEnv {
  const url = new URL(apiBase);
  const relays = [`${url.hostname.replace(/^\[|\]$/g, "")}:${url.port}=${SANDBOX_PLATFORM_SOCKET}`];
  for (const t of channel.tunnels) relays.push(`127.0.0.1:${t.port}=${SANDBOX_WORKER_DIR}/${tunnelName(t.port)}`);
  return {
    SVC_PLATFORM_SOCKET: SANDBOX_PLATFORM_SOCKET,
    SVC_PLATFORM_RELAY: relays.join(";"),
    ...(lb ? { SVC_LB_SOCKET: SANDBOX_LB_SOCKET } : {}),
  };
}

let netns: Promise<boolean> | undefined;

/** Can bwrap give a worker its own network namespace here? Checked once per process. */
export function netnsUsable(user: SandboxUser | undefined = probeUser()): Promise<boolean> {
  netns ??= probeBwrap(user, ["--unshare-net"]);
  return netns;
}
