/**
 * Helpers of the platform commands (deploy, undeploy, env, app): connect, tables, confirmation. The
 * platform client and the config loader (zod, esbuild's cache) are imported
 * when first used: `svc shell` resolves the platform and may need neither (docs/architecture.md, "Startup").
 */
import { join } from "node:path";
import { createInterface } from "node:readline/promises";
import type { PlatformClient } from "../core/client/index.ts";
import { resolvePlatform, type ResolvedPlatform } from "../core/client/resolve.ts";
import { errors, isSvcError } from "../core/errors.ts";
import { loadDotEnv, projectRoot, type CommonFlags } from "./_shared.ts";

export interface PlatformFlags extends CommonFlags {
  app?: string;
  env?: string;
  yes?: boolean;
}

/** The embedded platform's start, handed to core's resolvePlatform (core does not import platform/). */
async function startEmbedded(): Promise<{ url: string; apiKey: string }> {
  const { ensureLocalPlatform } = await import("../platform/local.ts");
  return ensureLocalPlatform();
}

async function embeddedKeyFile(): Promise<string> {
  const { platformDir, API_KEY_FILE } = await import("../platform/local.ts");
  return join(platformDir(), API_KEY_FILE);
}

let toldEmbeddedKey = false;

/**
 * Loads `.env` and resolves the platform (no call to it but the embedded platform's liveness check).
 * With no PLATFORM_API_KEY set, the embedded platform's own key is used and svc says so (once per process).
 */
export async function resolveCliPlatform(root: string): Promise<ResolvedPlatform> {
  loadDotEnv(root);
  const platform = await resolvePlatform(process.env, { startEmbedded });
  if (platform.keySource === "embedded" && !toldEmbeddedKey) {
    toldEmbeddedKey = true;
    process.stderr.write(`PLATFORM_API_KEY is not set: using the embedded platform at ${platform.url} with its own key (${await embeddedKeyFile()}).\n`);
  }
  return platform;
}

/**
 * Resolves the platform (unless `resolved` is given) and checks the key with one cheap call, before
 * any build: a wrong key is AUTH_FAILED with the spec's remedy, also against the embedded platform.
 */
export async function connect(root: string, resolved?: ResolvedPlatform): Promise<{ client: PlatformClient; platform: ResolvedPlatform }> {
  const platform = resolved ?? (await resolveCliPlatform(root));
  const { createPlatformClient } = await import("../core/client/index.ts");
  const client = createPlatformClient(platform);
  try {
    await client.listApps();
  } catch (error) {
    if (isSvcError(error) && error.code === "AUTH_FAILED" && platform.embedded && platform.keySource === "user") {
      throw errors.AUTH_FAILED(
        platform.url,
        `set in PLATFORM_API_KEY (the embedded platform's own key is in ${await embeddedKeyFile()}; with PLATFORM_API_KEY unset svc uses it)`,
      );
    }
    throw error;
  }
  return { client, platform };
}

/** `--app`, else the app name of the project's config (folder name by default). */
export async function appName(flags: PlatformFlags, command: string): Promise<string> {
  if (flags.app) return flags.app;
  const { loadConfig } = await import("../core/config.ts");
  const config = await loadConfig(projectRoot(flags), { command, mode: "production" });
  return config.app;
}

/** Endpoints across the given environments. */
export const endpointCount = (environments: readonly { endpoints: readonly unknown[] }[]): number =>
  environments.reduce((n, environment) => n + environment.endpoints.length, 0);

/** Plain aligned columns; the header underlined with dashes. */
export function formatTable(headers: string[], rows: Array<Array<string | number | null | undefined>>): string {
  const cells = rows.map((row) => row.map((cell) => (cell === null || cell === undefined || cell === "" ? "-" : String(cell))));
  const widths = headers.map((header, i) => Math.max(header.length, ...cells.map((row) => row[i]?.length ?? 0)));
  const line = (row: string[]) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ");
  return [line(headers), line(widths.map((w) => "-".repeat(w))), ...cells.map(line)].join("\n");
}

export function printTable(headers: string[], rows: Array<Array<string | number | null | undefined>>): void {
  process.stdout.write(`${rows.length ? formatTable(headers, rows) : "(none)"}\n`);
}

/** `--yes` → true; a terminal → asks; no terminal → CONFIRMATION_REQUIRED. */
export async function confirm(question: string, flags: PlatformFlags, action: string): Promise<boolean> {
  if (flags.yes) return true;
  if (!process.stdin.isTTY) throw errors.CONFIRMATION_REQUIRED(action);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(`${question} [y/N] `);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}
