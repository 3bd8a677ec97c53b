/**
 * `GET /v2/<endpoint id>/shell` with `Upgrade: svc-shell`: `svc shell`'s route. The platform's API
 * key opens it, and a named key of role deploy whose scope covers the endpoint's app (a worker's key
 * is KEY_SCOPE, anything else UNAUTHORIZED): a shell runs what the user's own deploy runs. The platform starts the shell on its side (../workers/shell.ts), so
 * secrets are resolved into the sandbox's env and never sent to the client; after the 101 the
 * connection carries frames (core/shell-frames.ts). Plain Node on the server's `upgrade` event:
 * h3 has no hijacked sockets. A client that goes away ends its shell; so does the platform's stop.
 * docs/platform.md, "Shells".
 */
import { STATUS_CODES, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { errors, isSvcError } from "../../core/errors.ts";
import { errorReply } from "../../core/http-errors.ts";
import { encodeFrame, Frame, FrameReader, SHELL_PROTOCOL } from "../../core/shell-frames.ts";
import type { PlatformContext } from "../context.ts";
import { createKeyAccess } from "./key-access.ts";
import { startShell, type ShellRequest, type ShellSession } from "../workers/shell.ts";
import { keyOf } from "./_http.ts";

const SHELL_ROUTE = /^\/v2\/([^/]+)\/shell$/;
const MAX_COMMAND = 64 * 1024;

export interface ShellRoute {
  /** The server's `upgrade` listener. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Ends every open shell (the platform stops). */
  close(): void;
}

/** The request's shell: `command` (absent: interactive), `tty=1` with `rows`, `cols`, `term`. */
export function shellRequestOf(params: URLSearchParams): ShellRequest {
  const command = params.get("command") ?? undefined;
  if (command !== undefined && (command.length > MAX_COMMAND || command.includes("\0")))
    throw errors.BAD_REQUEST(`command must be at most ${MAX_COMMAND} characters, without NUL.`);
  if (params.get("tty") !== "1") return { command };
  const size = (name: string) => {
    const n = Number(params.get(name) ?? 24);
    if (!Number.isInteger(n) || n < 1 || n > 10_000) throw errors.BAD_REQUEST(`${name} must be an integer from 1 to 10000.`);
    return n;
  };
  const term = params.get("term") ?? undefined;
  if (term !== undefined && !/^[\w.+-]{1,64}$/.test(term)) throw errors.BAD_REQUEST("term must be a terminal type such as xterm-256color.");
  return { command, tty: { rows: size("rows"), cols: size("cols"), term } };
}

function refuse(socket: Duplex, error: unknown, log: (line: string) => void): void {
  const { status, text } = errorReply(error, log);
  const body = Buffer.from(text);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${body.byteLength}\r\nconnection: close\r\n\r\n${text}`,
  );
}

export function createShellRoute(ctx: PlatformContext): ShellRoute {
  const sessions = new Set<{ session?: ShellSession; socket: Duplex }>();
  const access = createKeyAccess(ctx);
  const log = ctx.options.log;

  /** The endpoint and the shell asked for, or the refusal (the route's checks, in order). */
  const checked = (req: IncomingMessage) => {
    const url = new URL(req.url ?? "/", "http://platform");
    const match = SHELL_ROUTE.exec(url.pathname);
    if (!match) throw errors.NOT_FOUND("Route", `${req.method} ${url.pathname}`);
    const caller = access.caller(keyOf(req.headers.authorization));
    if (isSvcError(caller)) throw caller;
    if (caller.workerScope) throw errors.KEY_SCOPE(ctx.workerKeys.describe(caller.workerScope), `${req.method} ${url.pathname}`);
    const refused = access.routeRefusal(caller.identity, "GET /v2/:endpoint/shell", decodeURIComponent(match[1]!), `${req.method} ${url.pathname}`);
    if (refused) throw refused;
    if (req.method !== "GET" || req.headers.upgrade?.toLowerCase() !== SHELL_PROTOCOL)
      throw errors.BAD_REQUEST(`The shell route takes GET with \`Upgrade: ${SHELL_PROTOCOL}\` (svc shell sends it).`);
    const endpointId = decodeURIComponent(match[1]!);
    const endpoint = ctx.store.endpoints.get(endpointId);
    if (!endpoint) throw errors.NOT_FOUND("Endpoint", endpointId);
    return { endpoint, request: shellRequestOf(url.searchParams) };
  };

  async function open(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const entry: { session?: ShellSession; socket: Duplex } = { socket };
    sessions.add(entry);
    let gone = false;
    socket.once("close", () => {
      gone = true;
      sessions.delete(entry);
      entry.session?.kill();
    });
    socket.on("error", () => undefined); // close follows
    try {
      const { endpoint, request } = checked(req);
      entry.session = await startShell(ctx.supervisor, ctx.store, endpoint, request);
    } catch (error) {
      if (!gone) refuse(socket, error, log);
      return;
    }
    const { proc } = entry.session;
    if (gone) return entry.session.kill();
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: ${SHELL_PROTOCOL}\r\nconnection: Upgrade\r\n\r\n`);
    pipeOutput(proc.stdout!, Frame.STDOUT, socket);
    pipeOutput(proc.stderr!, Frame.STDERR, socket);
    const stdin = proc.stdin!;
    stdin.on("error", () => undefined); // the shell exited before reading it all
    const reader = new FrameReader((type, payload) => {
      if (type === Frame.STDIN && !stdin.writableEnded && !stdin.write(payload)) {
        socket.pause();
        stdin.once("drain", () => socket.resume());
      } else if (type === Frame.STDIN_END) stdin.end();
    });
    socket.on("data", (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch {
        socket.destroy(); // not svc shell's frames
      }
    });
    if (head.byteLength) socket.emit("data", head);
    // `close`: the exit, and every byte of output read
    proc.once("close", (code, signal) => {
      for (const part of encodeFrame(Frame.EXIT, Buffer.from(JSON.stringify({ code, signal })))) socket.write(part);
      socket.end();
    });
  }

  return {
    upgrade(req, socket, head) {
      void open(req, socket, head).catch((error) => refuse(socket, error, log));
    },
    close() {
      for (const { session, socket } of sessions) {
        session?.kill();
        socket.destroy();
      }
    },
  };
}

/** A stream of the shell's output as frames; paused while the client reads slower than it writes. */
function pipeOutput(stream: NodeJS.ReadableStream, type: typeof Frame.STDOUT | typeof Frame.STDERR, socket: Duplex): void {
  stream.on("data", (chunk: Buffer) => {
    let ok = true;
    for (const part of encodeFrame(type, chunk)) ok = socket.write(part) && ok;
    if (!ok) {
      stream.pause();
      socket.once("drain", () => stream.resume());
    }
  });
}
