/** Helpers every command uses: project root, .env loading, error reporting, JSON output. */
import { existsSync, statSync } from "node:fs";
import { resolve, join } from "node:path";
import { errors, isSvcError } from "../core/errors.ts";
import { createLogger, formatMs, paint, type Logger } from "../core/logger.ts";

export interface CommonFlags {
  root?: string;
  json?: boolean;
  quiet?: boolean;
}

/** `--root` or the current folder; PROJECT_NOT_FOUND when it is not a folder (before anything starts). */
export function projectRoot(flags: CommonFlags): string {
  const root = resolve(flags.root ?? process.cwd());
  if (!statSync(root, { throwIfNoEntry: false })?.isDirectory()) throw errors.PROJECT_NOT_FOUND(root);
  return root;
}

/** `--exclude a,b --exclude c` → ["a", "b", "c"]. */
export function parseList(value: string | string[] | undefined): string[] {
  return [value ?? []]
    .flat()
    .flatMap((item) => String(item).split(","))
    .map((item) => item.trim())
    .filter(Boolean);
}

/** `--port`: an integer from 0 to 65535 (0: any free port), `fallback` when absent; CLI_USAGE otherwise. */
export function parsePort(value: number | string | undefined, fallback: number, command: string): number {
  if (value === undefined || value === "") return fallback;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw errors.CLI_USAGE(`--port must be an integer from 0 to 65535, not "${value}".`, command);
  return port;
}

/** Loads `<root>/.env` into process.env without overriding variables already set in the shell. */
export function loadDotEnv(root: string): void {
  const file = join(root, ".env");
  if (existsSync(file)) process.loadEnvFile(file);
}

export function commandLogger(flags: CommonFlags): Logger {
  return createLogger(flags.quiet ? "warn" : "info");
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Prints an error the way users should see it and returns the exit code. */
export function reportError(error: unknown, json: boolean): number {
  if (json) {
    const body = isSvcError(error) ? error.toJSON() : { code: "INTERNAL", message: String((error as Error)?.message ?? error) };
    printJson({ ok: false, error: body });
    return 1;
  }
  if (isSvcError(error)) {
    process.stderr.write(`${paint(31, "error")} [${error.code}] ${error.message}\n`);
  } else {
    process.stderr.write(`${paint(31, "error")} ${(error as Error)?.stack ?? String(error)}\n`);
  }
  return 1;
}

/**
 * Where a command's whole wait went, from `started` (performance.now() when its action began: the
 * process's start-up before it): `3.72 s (stages 3.65 s, config, platform and clean-up 70 ms; start-up before it 1.14 s)`.
 */
export function wholeWait(stagesMs: number, started: number, between = "config and clean-up"): string {
  const ms = performance.now() - started;
  return `${formatMs(ms)} (stages ${formatMs(stagesMs)}, ${between} ${formatMs(Math.max(0, ms - stagesMs))}; start-up before it ${formatMs(started)})`;
}
