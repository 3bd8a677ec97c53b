/**
 * `svc deploy`: build, upload, provision, configure — then list the endpoints grouped by type.
 *
 * `--preview` deploys to an ephemeral embedded platform instead (temp data dir, loopback, random
 * port), prints the local URLs and removes everything on Ctrl+C. The spec's preview runs one
 * container per endpoint; svc has no container engine of its own (docker here is only a client),
 * so preview runs workers as local processes. When `docker info` succeeds svc says that container
 * preview is not implemented yet and that process preview is used.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CAC } from "cac";
import { checkEnvironmentName, createPlatformClient, planEnvironment, type PlatformClient } from "../../core/client/index.ts";
import type { Logger } from "../../core/logger.ts";
import type { BuildContext } from "../../core/types.ts";
import { API_KEY_FILE, platformDir } from "../../platform/local.ts";
import { runBuild } from "../../plugins/index.ts";
import { connect } from "../_platform.ts";
import { commandLogger, loadDotEnv, parseList, printJson, projectRoot, wholeWait, type CommonFlags } from "../_shared.ts";
import { deploySummary, formatDeploySummary, type DeploySummary } from "./_deploy-output.ts";

interface DeployFlags extends CommonFlags {
  env?: string;
  exclude?: string | string[];
  deps?: boolean;
  preview?: boolean;
}

export interface DeployOptions {
  root: string;
  client: PlatformClient;
  env?: string;
  exclude?: string[];
  noDeps?: boolean;
  logger?: Logger;
}

/** The deploy itself (the command and the tests call it): pipeline until configure on `client`. */
export async function runDeploy(options: DeployOptions): Promise<{ ctx: BuildContext; summary: DeploySummary }> {
  checkEnvironmentName(options.env); // a name the platform would refuse fails before the build
  const ctx = await runBuild({
    root: options.root,
    options: { until: "configure", env: options.env, exclude: options.exclude ?? [], noDeps: options.noDeps ?? false },
    logger: options.logger,
    env: { command: "deploy", mode: "production" },
    prepare: async (ctx) => {
      ctx.client = options.client;
      // The environment rules before the build: several environments and no --env fail now, not after it.
      planEnvironment(ctx.config.app, await options.client.getApp(ctx.config.app), options.env);
    },
  });
  return { ctx, summary: deploySummary(ctx, options.client.url) };
}

/** True when a container engine answers (`docker info` exits 0 within 5 s). */
export function containerEngineReachable(): Promise<boolean> {
  return new Promise((resolve) => {
    execFile("docker", ["info"], { timeout: 5000 }, (error) => resolve(!error));
  });
}

interface PreviewPlatform {
  url: string;
  apiKey: string;
  close(): Promise<void>;
}

/** An embedded platform of its own: temp data dir, loopback, a free port, its own API key. */
async function startPreviewPlatform(dataDir: string, logger: Logger): Promise<PreviewPlatform> {
  const { startPlatform } = await import("../../platform/index.ts");
  return startPlatform({ dataDir, port: 0, host: "127.0.0.1", log: (line) => logger.debug(`[platform] ${line}`) });
}

const waitForSignal = (signals: NodeJS.Signals[]) =>
  new Promise<NodeJS.Signals>((resolve) => {
    const handler = (signal: NodeJS.Signals) => {
      for (const s of signals) process.off(s, handler);
      resolve(signal);
    };
    for (const s of signals) process.on(s, handler);
  });

async function preview(root: string, flags: DeployFlags, logger: Logger): Promise<void> {
  if (await containerEngineReachable()) {
    logger.warn("a container engine is reachable, but container preview is not implemented yet: using process preview (workers run as local processes)");
  }
  const dataDir = await mkdtemp(join(tmpdir(), "svc-preview-"));
  let platform: PreviewPlatform | undefined;
  const cleanup = async () => {
    await platform?.close().catch((error) => logger.warn(`stopping the preview platform: ${(error as Error).message}`));
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    platform = await startPreviewPlatform(dataDir, logger);
    logger.info(`preview platform on ${platform.url} (data in ${dataDir})`);
    const client = createPlatformClient(platform);
    const { summary } = await runDeploy({ root, client, env: flags.env, exclude: parseList(flags.exclude), noDeps: flags.deps === false, logger });
    if (flags.json) printJson({ ...summary, preview: true, apiKey: platform.apiKey, dataDir });
    else process.stdout.write(`${formatDeploySummary(summary, platform.apiKey)}\n\nPreview running. Press Ctrl+C to stop it and remove everything.\n`);
  } catch (error) {
    await cleanup();
    throw error;
  }
  await waitForSignal(["SIGINT", "SIGTERM"]);
  logger.info("stopping preview…");
  await cleanup();
  logger.info("preview stopped, temporary platform removed");
}

export function registerDeploy(cli: CAC): void {
  cli
    .command("deploy", "Build, upload, provision and configure the app's endpoints on the platform")
    .option("--env <name>", "Environment to deploy to (created when missing; default: the app's only one, or production)")
    .option("--exclude <packages>", "Comma-separated packages to leave out of the artifact")
    .option("--no-deps", "Do not install dependencies into the artifact")
    .option(
      "--preview",
      "Deploy to a temporary local platform and serve the endpoints locally until Ctrl+C (workers run as local processes; container preview is not implemented)",
    )
    .option("--json", "Print the result as JSON")
    .option("--root <dir>", "Project folder (default: current folder)")
    .option("--quiet", "Only warnings and errors on stderr")
    .action(async (flags: DeployFlags) => {
      const started = performance.now();
      const root = projectRoot(flags);
      const logger = commandLogger(flags);
      checkEnvironmentName(flags.env); // before the platform is asked anything
      if (flags.preview) {
        loadDotEnv(root);
        return preview(root, flags, logger);
      }
      const { client, platform } = await connect(root); // loads .env first
      const { ctx, summary } = await runDeploy({ root, client, env: flags.env, exclude: parseList(flags.exclude), noDeps: flags.deps === false, logger });
      logger.info(
        `deployed in ${wholeWait(
          ctx.logger.timings.reduce((sum, t) => sum + t.ms, 0),
          started,
          "config, platform and clean-up",
        )}`,
      );
      if (flags.json) printJson(summary);
      // The embedded platform's key lives in its state folder, not in the user's environment.
      else
        process.stdout.write(
          `${formatDeploySummary(summary, platform.keySource === "embedded" ? `$(cat ${join(platformDir(), API_KEY_FILE)})` : undefined)}\n`,
        );
    });
}
