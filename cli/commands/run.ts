/**
 * `svc run`: the local development server (spec 4.3). Endpoint functions run on the platform as
 * temporary `live-` endpoints; the server is the front door, rebuilds on change, and deletes its
 * endpoints on Ctrl+C / SIGTERM. The implementation is dev/.
 */
import type { CAC } from "cac";
import { startDevServer, type DevServer } from "../../dev/index.ts";
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
      // Handled from the start, not from "ready": a signal during startup (or just as the banner
      // prints) must not kill the process with live- endpoints still deployed.
      const stop = stopSignals(logger);
      try {
        const { client } = await connect(root);
        if (stop.received) return;
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
        const signal = await stop.next;
        logger.info(`\n${signal}: stopping, deleting live- endpoints…`);
        await server.close().catch((error: Error) => logger.warn(`clean-up failed: ${error.message}`));
      } finally {
        stop.dispose();
      }
    });
}

interface StopSignals {
  /** The first SIGINT/SIGTERM, once it arrives. */
  next: Promise<NodeJS.Signals>;
  received?: NodeJS.Signals;
  dispose(): void;
}

/** The first signal asks for a clean stop; a second one exits at once (live- endpoints left to the next run). */
function stopSignals(logger: { info(m: string): void; warn(m: string): void }): StopSignals {
  let resolveNext!: (signal: NodeJS.Signals) => void;
  const state: StopSignals = {
    next: new Promise((resolve) => (resolveNext = resolve)),
    dispose() {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    },
  };
  function onSignal(signal: NodeJS.Signals) {
    if (state.received) {
      logger.warn(
        `${signal} again: exiting now; live- endpoints not yet deleted stay in .platform/resources.pkl and are reused or deleted by the next svc run`,
      );
      process.exit(130);
    }
    state.received = signal;
    resolveNext(signal);
  }
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return state;
}
