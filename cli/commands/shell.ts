/**
 * `svc shell <endpoint> [--env name] [-c "command"]`: a shell (or one command) in exactly what the
 * endpoint's worker sees — its image environment, the deployed build at /app, its volume, its env
 * with secrets resolved, the same sandbox and limits — for "works locally, fails deployed". The
 * platform starts it on its side and streams its stdio (core/client/shell.ts); a terminal on both
 * stdin and stdout gets a pseudo-terminal there (raw mode here), anything else plain pipes. The
 * exit code is the shell's. A hosted platform offers none: SHELL_UNAVAILABLE. docs/platform.md, "Shells".
 */
import type { CAC } from "cac";
import { findEnvironment, LIVE_PREFIX, runShell, type PlatformClient } from "../../core/client/index.ts";
import { errors } from "../../core/errors.ts";
import { appName, connect, type PlatformFlags } from "../_platform.ts";
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
      const { client, platform } = await connect(projectRoot(flags));
      const endpointId = await findEndpoint(client, String(endpoint), () => appName(flags, "shell"), flags.env);
      const terminal = process.stdin.isTTY && process.stdout.isTTY;
      const tty = terminal ? { rows: process.stdout.rows || 24, cols: process.stdout.columns || 80, term: process.env.TERM } : undefined;
      if (terminal) process.stdin.setRawMode(true);
      try {
        process.exitCode = await runShell(platform, {
          endpointId,
          command: flags.c,
          tty,
          stdin: process.stdin,
          stdout: process.stdout,
          stderr: process.stderr,
        });
      } finally {
        if (terminal) process.stdin.setRawMode(false);
        process.stdin.pause(); // nothing more to read: the process can end
      }
    });
}
