/**
 * The platform's state folder: `~/.svc/platform` unless `SVC_PLATFORM_DIR` says otherwise.
 * Holds the database, `api-key` (plain text, mode 0600, for the CLI) and `platform.json`
 * ({pid, url} of a running platform).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { newSecret } from "./_ids.ts";

export const API_KEY_FILE = "api-key";
export const STATE_FILE = "platform.json";
export const DB_FILE = "platform.db";
export const LOG_FILE = "platform.log";

export function platformDir(dir?: string): string {
  return resolve(dir ?? process.env.SVC_PLATFORM_DIR ?? join(homedir(), ".svc", "platform"));
}

export function readApiKey(dir: string): string | undefined {
  try {
    const key = readFileSync(join(dir, API_KEY_FILE), "utf8").trim();
    return key || undefined;
  } catch {
    return undefined;
  }
}

/** The API key of this folder, created (and written with mode 0600) on first use. */
export function ensureApiKey(dir: string): { apiKey: string; created: boolean; file: string } {
  const file = join(dir, API_KEY_FILE);
  const existing = readApiKey(dir);
  if (existing) return { apiKey: existing, created: false, file };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const apiKey = newSecret("svc_");
  writeFileSync(file, `${apiKey}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(file, 0o600);
  return { apiKey, created: true, file };
}

export interface PlatformState {
  pid: number;
  url: string;
  startedAt: string;
}

export function readState(dir: string): PlatformState | undefined {
  const file = join(dir, STATE_FILE);
  if (!existsSync(file)) return undefined;
  try {
    const value = JSON.parse(readFileSync(file, "utf8")) as PlatformState;
    return typeof value.pid === "number" && typeof value.url === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

export function writeState(dir: string, state: PlatformState): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, STATE_FILE), `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
}

/** Removes platform.json if it still names `pid`. */
export function removeState(dir: string, pid = process.pid): void {
  if (readState(dir)?.pid === pid) rmSync(join(dir, STATE_FILE), { force: true });
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
