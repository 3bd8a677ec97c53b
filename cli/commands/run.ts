/**
 * `svc run`: the local development server (spec 4.3). Endpoint functions run on the platform as
 * temporary `live-` endpoints; the server is the front door, rebuilds on change, and deletes its
 * endpoints on Ctrl+C / SIGTERM. The implementation is plugins/dev-server/.
 */
import type { CAC } from "cac";
import { startDevServer, type DevServer } from "../../plugins/dev-server/index.ts";
import { confirm, connect } from "../_platform.ts";
import { commandLogger, parsePort, projectRoot, type CommonFlags } from "../_shared.ts";

const DEFAULT_PORT = 8888;

interface RunFlags extends CommonFlags {
  host?: string;
  port?: number | string;
  reload?: boolean;
  autoProvision?: boolean;
  yes?: boolean;
}

export function registerRun(cli: CAC): void {
  cli
    .command("run", "Start the local development server (functions run on the platform as live- endpoints)")
    .option("--host <host>", "Address to bind", { default: "localhost" })
    .option("-p, --port <port>", "Port; when it is in use the next free one is taken", { default: DEFAULT_PORT })
    .option("--reload", "Reload on code changes (--no-reload to turn off)", { default: true })
    .option("--auto-provision", "Deploy every endpoint at startup instead of on its first call")
    .option("--yes", "Do not ask before deploying more than 5 endpoints")
    .option("--root <dir>", "Project folder (default: the current folder)")
    .option("--quiet", "Only warnings and errors")
    .example("svc run --port 9000 --auto-provision")
    .action(async (flags: RunFlags) => {
      const root = projectRoot(flags);
      const logger = commandLogger(flags);
      const port = parsePort(flags.port, DEFAULT_PORT, "run");
      const { client } = await connect(root);
      const server: DevServer = await startDevServer({
        root,
        client,
        host: String(flags.host ?? "localhost"),
        port,
        reload: flags.reload !== false,
        autoProvision: Boolean(flags.autoProvision),
        yes: Boolean(flags.yes),
        confirm: (question) => confirm(question, { yes: flags.yes }, "deploy more than 5 live- endpoints"),
        logger,
      });
      await waitForStop(server, logger);
    });
}

/** Resolves once a signal stopped the server and its `live-` endpoints are deleted. */
function waitForStop(server: DevServer, logger: { info(m: string): void; warn(m: string): void }): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn(`${signal} again: exiting now; live- endpoints not yet deleted stay in .platform/resources.pkl and are reused or deleted by the next svc run`);
        process.exit(130);
      }
      stopping = true;
      logger.info(`\n${signal}: stopping, deleting live- endpoints…`);
      server
        .close()
        .catch((error: Error) => logger.warn(`clean-up failed: ${error.message}`))
        .finally(() => {
          process.off("SIGINT", stop);
          process.off("SIGTERM", stop);
          resolve();
        });
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
