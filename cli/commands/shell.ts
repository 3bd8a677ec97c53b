/**
 * `svc shell <endpoint> [--env name] [-c "command"]`: a shell (or one command) in exactly what the
 * endpoint's worker sees — its image environment, the deployed build at /app, its volume, its env
 * with secrets resolved, the same sandbox and limits — for "works locally, fails deployed". The
 * platform starts it on its side and streams its stdio (core/client/shell.ts); a terminal on both
 * stdin and stdout gets a pseudo-terminal there (raw mode here), anything else plain pipes. The
 * exit code is the shell's. A hosted platform offers none: SHELL_UNAVAILABLE. docs/platform.md, "Shells".
 *
 * Start-up (bench/shell/run.ts): the endpoint's id comes from the deploy state `svc deploy` left in
 * the project when it names the endpoint on this platform, so the shell loads neither the platform
 * client nor the config; a stale id (the platform answers NOT_FOUND or AUTH_FAILED before anything
 * ran) falls back to asking the platform, which also gives those errors their full remedies.
 */
import { join } from "node:path";
import type { CAC } from "cac";
import type { PlatformClient } from "../../core/client/index.ts";
import { LIVE_PREFIX, findEnvironment } from "../../core/client/environments.ts";
import type { ResolvedPlatform } from "../../core/client/resolve.ts";
import { runShell } from "../../core/client/shell.ts";
import { deployedEndpointId } from "../../core/deployed-endpoints.ts";
import { errors, isSvcError } from "../../core/errors.ts";
import { appName, connect, resolveCliPlatform, type PlatformFlags } from "../_platform.ts";
import { projectRoot } from "../_shared.ts";

interface ShellFlags extends PlatformFlags {
  c?: string;
}

/** `<endpoint>`: a platform id, a `live-` name (svc run), else the app's endpoint of that name in the environment. */
async function findEndpoint(client: PlatformClient, endpoint: string, app: () => Promise<string>, env?: string): Promise<string> {
  const live = await client.listEndpoints();
  const direct = live.find((e) => e.id === endpoint || (endpoint.startsWith(LIVE_PREFIX) && e.name === endpoint));
  if (direct) return direct.id;
  const { environment } = await findEnvironment(client, await app(), env);
  const deployed = environment.endpoints.find((e) => e.name === endpoint);
  if (deployed) return deployed.id;
  const names = environment.endpoints.map((e) => e.name);
  throw errors.NOT_FOUND(
    `Endpoint of environment "${environment.name}"`,
    endpoint,
    `Its endpoints: ${names.join(", ") || "none"} (\`svc env get ${environment.name}\`); a live- name while \`svc run\` runs, or an endpoint id.`,
  );
}

export function registerShell(cli: CAC): void {
  cli
    .command("shell <endpoint>", "Open a shell (or run one command) in what an endpoint's worker sees: its image, /app, volume, env and sandbox")
    .option("-c <command>", "Run this command line (sh -c) instead of an interactive shell; its exit code is svc's")
    .option("--env <name>", "Environment of the endpoint (default: the app's only one)")
    .option("--app <name>", "App name (default: from svc.config.ts or the folder name)")
    .option("--root <dir>", "Project folder (default: current folder)")
    .example("svc shell generate -c \"ls /app && python -c 'import torch; print(torch.__version__)'\"")
    .action(async (endpoint: string, flags: ShellFlags) => {
      if (flags.c !== undefined && typeof flags.c !== "string") throw errors.CLI_USAGE('-c takes a command line, e.g. -c "ls /app".', "shell");
      const root = projectRoot(flags);
      const platform = await resolveCliPlatform(root);
      const open = (endpointId: string) => openShell(platform, endpointId, flags.c);
      const name = String(endpoint);
      const deployed = name.startsWith(LIVE_PREFIX)
        ? undefined
        : await deployedEndpointId(join(root, ".svc"), { platform: platform.url, name, environment: flags.env, app: flags.app });
      if (deployed) {
        try {
          process.exitCode = await open(deployed);
          return;
        } catch (error) {
          if (!isSvcError(error) || (error.code !== "NOT_FOUND" && error.code !== "AUTH_FAILED")) throw error;
        }
      }
      const { client } = await connect(root, platform);
      process.exitCode = await open(await findEndpoint(client, name, () => appName(flags, "shell"), flags.env));
    });
}

/** Runs the shell until it exits (a terminal in raw mode meanwhile); answers its exit code. */
async function openShell(platform: ResolvedPlatform, endpointId: string, command: string | undefined): Promise<number> {
  const terminal = process.stdin.isTTY && process.stdout.isTTY;
  const tty = terminal ? { rows: process.stdout.rows || 24, cols: process.stdout.columns || 80, term: process.env.TERM } : undefined;
  if (terminal) process.stdin.setRawMode(true);
  try {
    return await runShell(platform, { endpointId, command, tty, stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
  } finally {
    if (terminal) process.stdin.setRawMode(false);
    process.stdin.pause(); // nothing more to read: the process can end
  }
}
