/**
 * Connection caps of the platform's HTTP servers, so one client (a worker opening thousands of
 * connections) cannot take the descriptors everyone else needs. On loopback every client has the
 * same address, so a connection is counted against the client its first request names: a worker's
 * routes by its worker id, anything else by its key. A connection over its client's cap is answered
 * 429 CONNECTION_LIMIT and closed. One that never sends a request names nobody: it is closed after
 * `firstRequestMs`, and when all `total` places are taken the oldest such connection makes room
 * for a new one (a client that sends its request at once is never the oldest). The platform also
 * raises its own descriptor limit where the OS allows (`raiseDescriptorLimit`). docs/platform.md, "Limits".
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { errors } from "../../core/errors.ts";
import type { ConnectionLimits } from "../limit-options.ts";
import { errorReply } from "./_http.ts";
/** Descriptors kept for the platform's own files, pipes and workers beside its connections. */
const RESERVED_DESCRIPTORS = 2048;

const WORKER_ROUTE = /^\/v2\/_worker\/([^/?]+)/;

/** Who a request is from, as far as its connection counts. */
function clientOf(req: IncomingMessage): { key: string; cap: "perClient" | "perWorker" } {
  const worker = WORKER_ROUTE.exec(req.url ?? "")?.[1];
  if (worker) return { key: `worker ${worker}`, cap: "perWorker" };
  const auth = req.headers.authorization;
  return { key: auth ? `key ${auth}` : `address ${req.socket.remoteAddress ?? "local"}`, cap: "perClient" };
}

export class ConnectionCaps {
  /** Connections that sent no request yet, oldest first, with when they came. */
  private readonly unnamed = new Map<Socket, number>();
  private readonly named = new WeakMap<Socket, string>();
  private readonly perClient = new Map<string, number>();
  private open = 0;
  /** Connections refused or closed by the caps (for the platform's log). */
  refused = 0;

  constructor(readonly limits: ConnectionLimits) {}

  attach(server: Server): void {
    server.on("connection", (socket: Socket) => this.connected(socket));
  }

  private connected(socket: Socket): void {
    this.open++;
    this.unnamed.set(socket, Date.now());
    socket.once("close", () => {
      this.open--;
      this.unnamed.delete(socket);
      const client = this.named.get(socket);
      if (client === undefined) return;
      const n = (this.perClient.get(client) ?? 1) - 1;
      if (n > 0) this.perClient.set(client, n);
      else this.perClient.delete(client);
    });
    if (this.open <= this.limits.total) return;
    const [oldest] = this.unnamed.keys(); // the longest without a request: never a client that asked at once
    this.refused++;
    (oldest ?? socket).destroy();
  }

  /** Counts the request's connection against its client on its first request; false (answered 429) over the cap. */
  admit(req: IncomingMessage, res: ServerResponse): boolean {
    const socket = req.socket;
    if (!this.unnamed.delete(socket)) return true;
    const { key, cap } = clientOf(req);
    const n = (this.perClient.get(key) ?? 0) + 1;
    this.perClient.set(key, n);
    this.named.set(socket, key);
    if (n <= this.limits[cap]) return true;
    this.refused++;
    const reply = errorReply(errors.CONNECTION_LIMIT(this.limits[cap], cap === "perWorker" ? "worker" : "client"));
    res.writeHead(reply.status, { "content-type": "application/json", connection: "close" }).end(reply.text);
    return false;
  }

  /** Closes connections that sent no request in time (the platform's sweep). */
  sweep(now = Date.now()): void {
    for (const [socket, since] of this.unnamed) {
      if (now - since < this.limits.firstRequestMs) break;
      this.refused++;
      socket.destroy();
    }
  }
}

/** This process's open-files limit, soft and hard. */
function descriptorLimit(): { soft: number; hard: number } | undefined {
  const line = /^Max open files\s+(\S+)\s+(\S+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
  if (!line) return undefined;
  const n = (text: string) => (text === "unlimited" ? Infinity : Number(text));
  return { soft: n(line[1]!), hard: n(line[2]!) };
}

/**
 * Raises the soft open-files limit to the hard one (as root, both to the kernel's `nr_open`) with
 * util-linux `prlimit` (Node has no setrlimit), and answers the connection total that fits under it.
 */
export function raiseDescriptorLimit(limits: ConnectionLimits, log: (line: string) => void): ConnectionLimits {
  if (process.platform !== "linux") return limits;
  const before = descriptorLimit();
  if (!before) return limits;
  let target = before.hard;
  if (process.getuid?.() === 0) target = Math.max(target === Infinity ? 0 : target, Number(readFileSync("/proc/sys/fs/nr_open", "utf8")) || 0);
  if (Number.isFinite(target) && target > before.soft) {
    const set = spawnSync(
      "prlimit",
      ["--pid", String(process.pid), `--nofile=${target}:${Math.max(target, before.hard === Infinity ? target : before.hard)}`],
      { stdio: "ignore" },
    );
    if (set.status !== 0) log(`open files: could not raise the limit of ${before.soft} (prlimit ${set.error ? "is missing" : `exited ${set.status}`})`);
  }
  const after = descriptorLimit() ?? before;
  const total = Math.max(64, Math.min(limits.total, after.soft - RESERVED_DESCRIPTORS));
  if (total < limits.total) log(`open files: ${after.soft}; the platform keeps at most ${total} connections open`);
  return { ...limits, total };
}
