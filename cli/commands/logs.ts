/**
 * `svc logs <endpoint> [--follow] [--env] [--since] [--lines]`: an endpoint's worker output (its
 * print()s, tracebacks and the platform's notes about its workers), from the platform's GraphQL
 * `workerLogLines` — the same client code for the embedded and a hosted platform. A deleted
 * endpoint's logs stay readable for the platform's retention (docs/dev-server.md, "Worker logs").
 */
import type { CAC } from "cac";
import type { PlatformClient } from "../../core/client/index.ts";
import { LIVE_PREFIX, planEnvironment } from "../../core/client/index.ts";
import { errors } from "../../core/errors.ts";
import { paint } from "../../core/logger.ts";
import { fetchWorkerLogLines, followWorkerLogs, type WorkerLogLine } from "../../core/client/worker-logs.ts";
import { appName, connect, type PlatformFlags } from "../_platform.ts";
import { printJson, projectRoot } from "../_shared.ts";

interface LogsFlags extends PlatformFlags {
  follow?: boolean;
  since?: string;
  lines?: number | string;
}

const DEFAULT_LINES = 200;
const FOLLOW_WAIT_MS = 20_000;
const MAX_LINES = 10_000;

export interface LogTarget {
  id: string;
  name: string;
  /** ISO time, when the endpoint was deleted (its logs are kept for the retention). */
  deletedAt?: string;
}

interface DeletedEndpoint {
  id: string;
  name: string;
  environmentId: string | null;
  deletedAt: string;
}

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3600_000, d: 86_400_000 };

/** `--since`: a duration back from now (`30s`, `10m`, `2h`, `1d`) or an ISO time; answers an ISO time. */
export function parseSince(value: string, now = Date.now()): string {
  const duration = /^(\d+)\s*([smhd])$/.exec(value.trim());
  if (duration) return new Date(now - Number(duration[1]) * UNITS[duration[2]!]!).toISOString();
  const ms = Date.parse(value);
  if (!Number.isFinite(ms))
    throw errors.CLI_USAGE(`--since takes a duration such as 10m, 2h or 1d, or an ISO time such as 2026-11-23T14:00:00Z, not "${value}".`, "logs");
  return new Date(ms).toISOString();
}

/** `--lines`: 0 shows none of the past (with --follow: from now on, as `tail -f -n 0`). */
function parseLines(value: number | string | undefined): number {
  if (value === undefined || value === "") return DEFAULT_LINES;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > MAX_LINES) throw errors.CLI_USAGE(`--lines must be an integer from 0 to ${MAX_LINES}, not "${value}".`, "logs");
  return n;
}

/** Endpoints deleted within the retention, newest first. */
async function deletedEndpoints(client: PlatformClient): Promise<DeletedEndpoint[]> {
  const document = "query deletedEndpoints { deletedEndpoints { id name environmentId deletedAt } }";
  return (await client.graphql<{ deletedEndpoints: DeletedEndpoint[] }>("deletedEndpoints", document)).deletedEndpoints;
}

/**
 * Which endpoint `<endpoint>` means: a platform id; a `live-` name (svc run); else the app's
 * endpoint of that name in the environment (`--env`, or the app's only one); else one of those
 * deleted within the retention (by id, or by name in that environment), the newest first.
 */
export async function findLogTarget(client: PlatformClient, endpoint: string, app: () => Promise<string>, env?: string): Promise<LogTarget> {
  const live = await client.listEndpoints();
  const byId = live.find((e) => e.id === endpoint);
  if (byId) return { id: byId.id, name: byId.name };
  let environmentId: string | undefined;
  if (endpoint.startsWith(LIVE_PREFIX)) {
    const byName = live.find((e) => e.name === endpoint);
    if (byName) return { id: byName.id, name: byName.name };
  } else {
    const appName = await app();
    const found = await client.getApp(appName);
    if (found && found.environments.length > 0) {
      const plan = planEnvironment(appName, found, env);
      const environment = found.environments.find((e) => e.name === plan.environment);
      if (!environment) throw errors.NOT_FOUND(`Environment of app "${appName}"`, plan.environment, "`svc env list` lists the app's environments.");
      environmentId = environment.id;
      const deployed = environment.endpoints.find((e) => e.name === endpoint);
      if (deployed) return { id: deployed.id, name: deployed.name };
    }
  }
  const deleted = (await deletedEndpoints(client)).find(
    (e) => e.id === endpoint || (e.name === endpoint && (environmentId === undefined || e.environmentId === environmentId)),
  );
  if (deleted) return { id: deleted.id, name: deleted.name, deletedAt: deleted.deletedAt };
  throw errors.NOT_FOUND(
    "Endpoint",
    endpoint,
    "Give an endpoint name of the app (`svc env get <env>` lists them), a live- name while `svc run` runs, or an endpoint id. Logs of a deleted endpoint are kept for 24 hours.",
  );
}

const formatLine = (line: WorkerLogLine) => `${paint(90, `${line.at} ${line.workerId}`)} ${line.line}`;

export function registerLogs(cli: CAC): void {
  cli
    .command("logs <endpoint>", "Show an endpoint's worker output (print(), tracebacks); also of one deleted in the last 24 hours")
    .option("--follow, -f", "Keep printing new lines until Ctrl+C")
    .option("--since <time>", "Only lines from this time on: a duration back (30s, 10m, 2h, 1d) or an ISO time")
    .option("--lines, -n <count>", `How many of the newest lines to show first (default ${DEFAULT_LINES}; 0 with --follow: from now on)`)
    .option("--env <name>", "Environment of the endpoint (default: the app's only one)")
    .option("--app <name>", "App name (default: from svc.config.ts or the folder name)")
    .option("--json", "Print the lines as JSON (not with --follow)")
    .option("--root <dir>", "Project folder (default: current folder)")
    .example("svc logs hello --since 10m --follow")
    .action(async (endpoint: string, flags: LogsFlags) => {
      const since = flags.since === undefined ? undefined : parseSince(String(flags.since));
      const limit = parseLines(flags.lines);
      if (flags.json && flags.follow) throw errors.CLI_USAGE("--json prints the lines once; leave out --follow.", "logs");
      // The app's name (its svc.config.ts, bundled) is read while the platform answers: -f's request opens sooner.
      const app = appName(flags, "logs");
      app.catch(() => undefined); // needed only for a name: its error, if any, is thrown where it is used
      const { client } = await connect(projectRoot(flags));
      const target = await findLogTarget(client, String(endpoint), () => app, flags.env);
      // -n 0: nothing of the past; the newest line (not shown) marks where "from now on" starts
      const [fetched = []] = await fetchWorkerLogLines(client, [{ endpointId: target.id, since, limit: Math.max(limit, 1) }]);
      const lines = limit === 0 ? [] : fetched;
      const last = fetched.at(-1);
      if (flags.json) return printJson({ ok: true, endpoint: target, lines });
      if (target.deletedAt) process.stderr.write(`${target.name} (${target.id}) was deleted at ${target.deletedAt}; its logs are kept for 24 hours.\n`);
      for (const line of lines) process.stdout.write(`${formatLine(line)}\n`);
      if (!flags.follow) return;

      const follower = followWorkerLogs(client, {
        since: since ?? new Date().toISOString(),
        after: last ? { [target.id]: last.cursor } : {},
        targets: () => [{ endpointId: target.id, label: target.name }],
        onLine: (_target, line) => process.stdout.write(`${formatLine(line)}\n`),
        onError: (error) => process.stderr.write(`${paint(33, "warning")} ${(error as Error).message}\n`),
        waitMs: FOLLOW_WAIT_MS, // one request open at the platform, answered as a line comes
      });
      await new Promise<void>((resolve) => {
        process.once("SIGINT", () => resolve());
        process.once("SIGTERM", () => resolve());
      });
      await follower.stop();
    });
}
