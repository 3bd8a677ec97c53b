/**
 * svc/testing: run svc's real pipeline (the built-in plugins, the folder's own svc.config.ts plugins,
 * then yours) on a temporary copy of a folder, up to the manifest, the artifact, or through upload,
 * provision and configure against a real embedded platform in a temporary folder, so a plugin's
 * tests check what it does to a real build and a real deploy. docs/plugins.md ("Testing a plugin").
 */
import { existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { cp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { createPlatformClient, type PlatformClient } from "../core/client/index.ts";
import { createLogger } from "../core/logger.ts";
import type { BuildContext, BuildOptions, Logger, SvcPlugin } from "../core/types.ts";
import { runBuild } from "../plugins/index.ts";

/** runBuild: runPipeline with svc's built-in plugins (what `svc build` runs), for any stop stage and options; builtinPlugins(): the list. */
export { builtinPlugins, runBuild } from "../plugins/index.ts";

/** Temporary folders this process made (copies, platform folders): removed when it exits. */
const temporary = new Set<string>();
process.once("exit", () => {
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
});

function temporaryDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temporary.add(dir);
  return dir;
}

/** A running embedded platform of the test's own. */
export interface TestPlatform {
  /** `http://127.0.0.1:<port>` */
  url: string;
  apiKey: string;
  /** A platform client for it (what `ctx.client` is in a build deployed to it). */
  client: PlatformClient;
  /** Stops it (its workers too) and removes its folder. */
  close(): Promise<void>;
}

/**
 * Starts an embedded platform (SQLite, Python workers) in a temporary folder on loopback, at a free
 * port, with a key of its own; `close()` stops it and removes the folder. `log` receives its lines.
 */
export async function startTestPlatform({ log }: { log?: (line: string) => void } = {}): Promise<TestPlatform> {
  const dataDir = temporaryDir("svc-testing-platform-");
  const { startTemporaryPlatform } = await import("../platform/index.ts"); // loaded only by the tests that deploy
  const platform = await startTemporaryPlatform({ dataDir, host: "127.0.0.1", log: log ?? (() => {}) });
  return {
    url: platform.url,
    apiKey: platform.apiKey,
    client: createPlatformClient({ url: platform.url, apiKey: platform.apiKey }),
    async close() {
      await platform.dispose();
      temporary.delete(dataDir);
    },
  };
}

/**
 * Copies `root` into a temporary folder of the same name (so the app name is the same), without
 * its `.svc/` output; a `node_modules/` is linked, not copied. The copy is removed when the process
 * exits. The build then never writes into the fixture.
 */
export async function copyFolder(root: string): Promise<string> {
  const source = resolve(root);
  const copy = join(temporaryDir("svc-testing-"), basename(source));
  const skipped = new Set([join(source, ".svc"), join(source, "node_modules")]);
  await cp(source, copy, { recursive: true, filter: (path) => !skipped.has(path) });
  if (existsSync(join(source, "node_modules"))) symlinkSync(join(source, "node_modules"), join(copy, "node_modules"), "dir");
  return copy;
}

export interface BuildFolderOptions {
  /**
   * Stop after the manifest (discovery, grouping, handlers), after the artifact is packed, or after
   * configure (upload, provision and configure against `platform`).
   */
  until?: "manifest" | "pack" | "configure";
  /** Plugins under test, applied after the built-ins and the folder's own svc.config.ts plugins. */
  plugins?: SvcPlugin[];
  /** Other build options (`noDeps: true` skips pip for folders with requirements; `env` the environment). */
  options?: Partial<Omit<BuildOptions, "until">>;
  /** Silent by default; pass one to see or collect the build's lines and warnings. */
  logger?: Logger;
  /**
   * Where `until: "configure"` deploys: a platform from startTestPlatform(), left running so the
   * test can call what was deployed. Without one the kit starts one for this build and stops it
   * (and removes its folder) when the build ends.
   */
  platform?: TestPlatform;
}

/**
 * Builds a temporary copy of the app in `root` (ctx.root is the copy; its `.svc/` receives the
 * output) and answers the build context: `ctx.manifest`, `ctx.endpoints`, after "pack"
 * `ctx.artifact`, after "configure" `ctx.deployed` (with the platform's URLs). A plugin's error
 * rejects with the PLUGIN_ERROR (or PLUGIN_REFUSED) the CLI would print.
 */
export async function buildFolder(
  root: string,
  { until = "pack", plugins = [], options = {}, logger = createLogger("silent"), platform }: BuildFolderOptions = {},
): Promise<BuildContext> {
  const copy = await copyFolder(root);
  if (until !== "configure") return runBuild({ root: copy, plugins, logger, options: { ...options, until } });
  const target = platform ?? (await startTestPlatform());
  try {
    return await runBuild({
      root: copy,
      plugins,
      logger,
      options: { ...options, until },
      env: { command: "deploy", mode: "production" },
      prepare: (ctx) => {
        ctx.client = target.client;
      },
    });
  } finally {
    if (!platform) await target.close();
  }
}
