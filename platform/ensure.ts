/**
 * ensureLocalPlatform: the embedded platform the CLI uses when no PLATFORM_API_URL is set —
 * the one already running for the state folder, or a detached one started now.
 */
import { spawn } from "node:child_process";
import { closeSync, openSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { createServer } from "node:net";
import { join } from "node:path";
import { packagePath } from "../core/package-root.ts";
import { errors } from "../core/errors.ts";
import { platformDir, readState, readApiKey, isAlive, LOG_FILE, ensureApiKey } from "./state-dir.ts";

export const DEFAULT_PORT = 8787;
const BIN = packagePath("bin", "svc.mjs");

/**
 * True when a platform answers at `url` and accepts `apiKey`. On node:http, not undici: every command
 * that finds the embedded platform asks this first, and `svc shell` needs no other HTTP client.
 */
export function platformAnswers(url: string, apiKey: string | undefined, timeoutMs = 1500): Promise<boolean> {
  return new Promise((resolve) => {
    const headers = { "content-type": "application/json", authorization: `Bearer ${apiKey ?? ""}`, connection: "close" };
    try {
      const target = new URL(`${url}/graphql`);
      const req = (target.protocol === "https:" ? httpsRequest : httpRequest)(target, { method: "POST", headers, timeout: timeoutMs, agent: false }, (res) => {
        res.on("error", () => resolve(false)).resume();
        res.on("end", () => resolve(res.statusCode === 200));
      });
      req.on("timeout", () => req.destroy(new Error("timed out"))).on("error", () => resolve(false));
      req.end('{"query":"{ __typename }"}');
    } catch {
      resolve(false); // not a URL
    }
  });
}

/** The platform running for `dir`, if any (platform.json names a live process that answers). */
export async function runningPlatform(dir: string): Promise<{ pid: number; url: string; apiKey: string } | undefined> {
  const state = readState(dir);
  const apiKey = readApiKey(dir);
  if (!state || !apiKey || !isAlive(state.pid)) return undefined;
  return (await platformAnswers(state.url, apiKey)) ? { pid: state.pid, url: state.url, apiKey } : undefined;
}

const portFree = (port: number, host: string): Promise<boolean> =>
  new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });

export interface DetachOptions {
  dir: string;
  host?: string;
  port?: number;
  /** A taken port falls back to a free one (the CLI's own start); false: PORT_IN_USE, as in the foreground (`svc platform start --detach`). */
  portFallback?: boolean;
}

/**
 * Node flags of the platform process. A young generation of 16 MB from the start: with V8's
 * small default, a scavenge (1–2 ms, the whole process paused) came every ~250 jobs and
 * decided the runsync p99; now about one in 2,000 (docs/platform.md, "Hot path").
 */
export const PLATFORM_NODE_FLAGS = ["--min-semi-space-size=16"];

/** Starts `svc platform start` in the background (its output goes to `<dir>/platform.log`). */
export function spawnDetached(options: DetachOptions): number {
  mkdirSync(options.dir, { recursive: true, mode: 0o700 });
  const log = openSync(join(options.dir, LOG_FILE), "a");
  try {
    const args = [
      ...PLATFORM_NODE_FLAGS,
      BIN,
      "platform",
      "start",
      "--dir",
      options.dir,
      "--host",
      options.host ?? "127.0.0.1",
      "--port",
      String(options.port ?? DEFAULT_PORT),
    ];
    const child = spawn(process.execPath, args, { detached: true, stdio: ["ignore", log, log], env: process.env });
    child.unref();
    return child.pid ?? 0;
  } finally {
    closeSync(log);
  }
}

/** Waits until the platform of `dir` answers; fails after `timeoutMs`. */
export async function waitForPlatform(dir: string, timeoutMs: number, pid?: number): Promise<{ pid: number; url: string; apiKey: string }> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const running = await runningPlatform(dir);
    if (running) return running;
    if (pid && !isAlive(pid) && !readState(dir)) {
      throw errors.PLATFORM_UNREACHABLE(`the embedded platform in ${dir}`, new Error(`it exited at start; see ${join(dir, LOG_FILE)}`));
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw errors.PLATFORM_UNREACHABLE(`the embedded platform in ${dir}`, new Error(`it did not answer within ${timeoutMs} ms; see ${join(dir, LOG_FILE)}`));
}

/** Starts a detached platform for `dir` and waits for it; a taken port falls back to a free one unless `portFallback` is false. */
export async function startDetached(options: DetachOptions, timeoutMs = 20_000): Promise<{ pid: number; url: string; apiKey: string }> {
  const host = options.host ?? "127.0.0.1";
  let port = options.port ?? DEFAULT_PORT;
  if (port !== 0 && !(await portFree(port, host))) {
    if (options.portFallback === false) throw errors.PORT_IN_USE(port, false);
    port = 0;
  }
  ensureApiKey(options.dir);
  const pid = spawnDetached({ dir: options.dir, host, port });
  return waitForPlatform(options.dir, timeoutMs, pid);
}

/** A platform for the CLI: the running one, or one started now (detached). */
export async function ensureLocalPlatform(options: { dir?: string; port?: number; timeoutMs?: number } = {}): Promise<{ url: string; apiKey: string }> {
  const dir = platformDir(options.dir);
  const running = await runningPlatform(dir);
  if (running) return { url: running.url, apiKey: running.apiKey };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // One starter at a time: others wait for the platform it starts.
  const lock = join(dir, "start.lock");
  let locked = false;
  try {
    writeFileSync(lock, String(process.pid), { flag: "wx" });
    locked = true;
  } catch {
    const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? 0);
    if (age > 30_000) {
      rmSync(lock, { force: true });
      return ensureLocalPlatform(options);
    }
  }
  try {
    const started = locked
      ? await startDetached({ dir, port: options.port ?? DEFAULT_PORT }, options.timeoutMs ?? 20_000)
      : await waitForPlatform(dir, options.timeoutMs ?? 20_000);
    return { url: started.url, apiKey: started.apiKey };
  } finally {
    if (locked) rmSync(lock, { force: true });
  }
}
