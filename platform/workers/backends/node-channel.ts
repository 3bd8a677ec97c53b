/**
 * A worker's channel to the platform on a Ray node: the launcher listens on a Unix socket of the
 * worker's own and relays each connection to the platform's address, so the worker can have a
 * network namespace of its own (../worker-channel.ts, as a local worker has it: no view of the
 * node's loopback, the Ray dashboard or the GCS there, and with egress only through slirp4netns,
 * never to the node's own addresses). docs/platform.md, "Workers on a Ray cluster".
 */
import { chmod, mkdir, rm } from "node:fs/promises";
import { connect, createServer } from "node:net";
import { join } from "node:path";
import { listenUnix } from "../worker-channel.ts";

export interface NodeRelay {
  /** The socket the sandbox binds at /run/svc/platform.sock. */
  path: string;
  close(): Promise<void>;
}

/** A Unix socket's path is at most 107 bytes; the worker's folder beside it needs room too. */
const MAX_PATH = 80;

/** The relay for `apiBase` (plain HTTP only: the runtime speaks HTTP on the socket); undefined where it cannot be had. */
export async function relayToPlatform(nodeDir: string, workerId: string, apiBase: string): Promise<NodeRelay | undefined> {
  const url = new URL(apiBase);
  const dir = join(nodeDir, "run", workerId);
  const path = join(dir, "platform.sock");
  if (url.protocol !== "http:" || Buffer.byteLength(path) > MAX_PATH) return undefined;
  const port = Number(url.port || 80);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await rm(path, { force: true });
  const server = createServer((inside) => {
    const outside = connect(port, host);
    inside.pipe(outside).pipe(inside);
    inside.on("error", () => outside.destroy());
    outside.on("error", () => inside.destroy());
  });
  await listenUnix(server, path);
  await chmod(path, 0o666); // the worker's user connects (the folder keeps everyone else out)
  return {
    path,
    close: async () => {
      server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
