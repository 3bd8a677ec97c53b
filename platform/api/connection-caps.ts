/**
 * Connection caps of the platform's HTTP servers, so one client (a worker opening thousands of
 * connections) cannot take the descriptors everyone else needs. On loopback every client has the
 * same address, so a connection is counted against who its first request proves to be: `identify`
 * (the server's wiring, ./connection-identity.ts) verifies the credential it presents, and a
 * header the sender made up counts against one small budget shared by everyone unverified
 * (`anonymous`): a client cannot make itself a thousand clients by naming them. A connection over
 * its identity's cap is answered 429 CONNECTION_LIMIT and closed. One that never sends a request
 * names nobody: it is closed after `firstRequestMs`. When all `total` places are taken, a new
 * connection takes the place of the oldest that sent nothing yet, else of the oldest of whoever
 * holds the most, so no one worker or key starves the rest. A request not whole `requestMs` after
 * it began is cut (Node's requestTimeout): slow bodies do not hold a place for ever. The platform
 * also raises its own descriptor limit where the OS allows (`raiseDescriptorLimit`).
 * docs/platform.md, "Limits".
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

/** Who a connection's first request proved to be: a worker by its token on its own routes, else a key (`id` names it). */
export interface ConnectionIdentity {
  id: string;
  worker: boolean;
}

/** Verifies the credential a request presents; undefined when it proves nobody. */
export type Identify = (req: IncomingMessage) => ConnectionIdentity | undefined;

const ANONYMOUS = "anonymous";

export class ConnectionCaps {
  /** Connections that sent no request yet, oldest first, with when they came. */
  private readonly unnamed = new Map<Socket, number>();
  private readonly named = new WeakMap<Socket, string>();
  /** Each identity's connections, oldest first. */
  private readonly held = new Map<string, Set<Socket>>();
  private open = 0;
  /** Connections refused or closed by the caps (for the platform's log). */
  refused = 0;

  constructor(
    readonly limits: ConnectionLimits,
    private readonly identify: Identify,
  ) {}

  attach(server: Server): void {
    server.requestTimeout = this.limits.requestMs;
    server.headersTimeout = Math.min(server.headersTimeout, this.limits.requestMs);
    server.on("connection", (socket: Socket) => this.connected(socket));
  }

  private connected(socket: Socket): void {
    this.open++;
    this.unnamed.set(socket, Date.now());
    socket.once("close", () => {
      this.open--;
      this.unnamed.delete(socket);
      const id = this.named.get(socket);
      const sockets = id === undefined ? undefined : this.held.get(id);
      if (!sockets) return;
      sockets.delete(socket);
      if (sockets.size === 0) this.held.delete(id!);
    });
    if (this.open <= this.limits.total) return;
    this.refused++;
    this.makeRoomFor(socket).destroy();
  }

  /** The connection to close when all places are taken: the oldest silent one, else the oldest of the largest holder. */
  private makeRoomFor(socket: Socket): Socket {
    const [oldest] = this.unnamed.keys(); // the longest without a request: never a client that asked at once
    if (oldest !== socket) return oldest!;
    let largest: Set<Socket> | undefined;
    for (const sockets of this.held.values()) if (!largest || sockets.size > largest.size) largest = sockets;
    const [victim] = largest ?? [];
    return largest && largest.size > 1 ? victim! : socket;
  }

  /** Counts the request's connection against its identity on its first request; false (answered 429) over the cap. */
  admit(req: IncomingMessage, res: ServerResponse): boolean {
    const socket = req.socket;
    if (!this.unnamed.delete(socket)) return true;
    const who = this.identify(req);
    const id = who?.id ?? ANONYMOUS;
    const cap = !who ? this.limits.anonymous : who.worker ? this.limits.perWorker : this.limits.perClient;
    let sockets = this.held.get(id);
    if (!sockets) this.held.set(id, (sockets = new Set()));
    sockets.add(socket);
    this.named.set(socket, id);
    if (sockets.size <= cap) return true;
    this.refused++;
    const reply = errorReply(errors.CONNECTION_LIMIT(cap, !who ? "unverified" : who.worker ? "worker" : "client"));
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
