/**
 * The client's side of `svc shell` (docs/platform.md, "Shells"): `GET /v2/<endpoint id>/shell`
 * with `Upgrade: svc-shell` and the user's key, then frames (../shell-frames.ts) both ways until
 * the platform sends the shell's exit. A platform that does not upgrade and answers no svc error
 * (a hosted one) is SHELL_UNAVAILABLE; an svc error it answers (NOT_FOUND, KEY_SCOPE, ...) is
 * raised as itself.
 */
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { constants } from "node:os";
import type { Duplex } from "node:stream";
import { errors, SvcError, type ErrorCode } from "../errors.ts";
import { encodeFrame, Frame, FrameReader, SHELL_PROTOCOL } from "../shell-frames.ts";
import { mapTransportError } from "./_transport-errors.ts";

export interface ShellOptions {
  endpointId: string;
  /** `-c`: one command line; else an interactive shell. */
  command?: string;
  /** The user's terminal: the shell gets a pseudo-terminal of this size. */
  tty?: { rows: number; cols: number; term?: string };
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** The shell's exit status as a process's: its code, or 128 + the signal's number. */
export function exitCodeOf(status: { code: number | null; signal: string | null }): number {
  if (status.code !== null) return status.code;
  const number = status.signal ? constants.signals[status.signal as NodeJS.Signals] : undefined;
  return number ? 128 + number : 1;
}

/** Runs the shell until it exits; answers its exit code. */
export function runShell(platform: { url: string; apiKey: string }, options: ShellOptions): Promise<number> {
  const url = new URL(`${platform.url}/v2/${encodeURIComponent(options.endpointId)}/shell`);
  if (options.command !== undefined) url.searchParams.set("command", options.command);
  if (options.tty) {
    url.searchParams.set("tty", "1");
    url.searchParams.set("rows", String(options.tty.rows));
    url.searchParams.set("cols", String(options.tty.cols));
    if (options.tty.term) url.searchParams.set("term", options.tty.term);
  }
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, { method: "GET", headers: { authorization: `Bearer ${platform.apiKey}`, connection: "Upgrade", upgrade: SHELL_PROTOCOL } });
    req.on("error", (error) => reject(mapTransportError(platform.url, error)));
    req.on("response", (res) => void refusal(platform.url, res).then(reject, reject));
    req.on("upgrade", (res, socket, head) => {
      if (res.headers.upgrade?.toLowerCase() !== SHELL_PROTOCOL) {
        socket.destroy();
        return reject(errors.SHELL_UNAVAILABLE(platform.url, `101 to another protocol (${res.headers.upgrade ?? "none"})`));
      }
      attach(socket, head, options, resolve, () =>
        reject(errors.PLATFORM_UNREACHABLE(platform.url, new Error("the connection closed before the shell exited"))),
      );
    });
    req.end();
  });
}

/** Why the platform did not upgrade: its svc error, else SHELL_UNAVAILABLE. */
async function refusal(platform: string, res: IncomingMessage): Promise<SvcError> {
  let text = "";
  for await (const chunk of res) text += String(chunk);
  if (res.statusCode === 401) return errors.AUTH_FAILED(platform);
  let body: { error?: unknown; code?: unknown } | undefined;
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    body = undefined;
  }
  const code = typeof body?.code === "string" && Object.hasOwn(errors, body.code) ? (body.code as ErrorCode) : undefined;
  // A route svc's platform does not know (an older one) answers NOT_FOUND "Route": no shells there either.
  if (code && !(code === "NOT_FOUND" && String(body?.error).startsWith("Route "))) return new SvcError(code, String(body?.error), { status: res.statusCode });
  return errors.SHELL_UNAVAILABLE(platform, `HTTP ${res.statusCode}${text ? `: ${text.slice(0, 200)}` : ""}`);
}

/** Frames both ways: stdin out, output in, until the exit frame. */
function attach(socket: Duplex, head: Buffer, options: ShellOptions, done: (code: number) => void, lost: () => void): void {
  let exited = false;
  const reader = new FrameReader((type, payload) => {
    if (type === Frame.STDOUT) options.stdout.write(payload);
    else if (type === Frame.STDERR) options.stderr.write(payload);
    else if (type === Frame.EXIT) {
      exited = true;
      options.stdin.removeListener("data", onInput);
      options.stdin.removeListener("end", onEnd);
      done(exitCodeOf(JSON.parse(payload.toString("utf8")) as { code: number | null; signal: string | null }));
    }
  });
  const onInput = (chunk: Buffer | string) => {
    for (const part of encodeFrame(Frame.STDIN, typeof chunk === "string" ? Buffer.from(chunk) : chunk)) socket.write(part);
  };
  // A terminal's Ctrl+D is a byte the shell reads; only a pipe's end is sent as the end of stdin.
  const onEnd = () => {
    if (!options.tty) for (const part of encodeFrame(Frame.STDIN_END)) socket.write(part);
  };
  socket.on("data", (chunk: Buffer) => reader.push(chunk));
  socket.on("error", () => undefined); // close follows
  socket.on("close", () => {
    if (!exited) lost();
  });
  if (head.byteLength) reader.push(head);
  options.stdin.on("data", onInput);
  options.stdin.on("end", onEnd);
}
