/**
 * `svc schedule list [--env]`: the app's scheduled endpoints in an environment, each with its cron
 * expression, time zone, last run (job id, status) and next run, from the platform's GraphQL
 * (`Endpoint.schedule`, docs/platform.md "Schedules") — the same query for a hosted platform.
 */
import type { CAC } from "cac";
import { findEnvironment } from "../../core/client/index.ts";
import { errors } from "../../core/errors.ts";
import { appName, connect, printTable, type PlatformFlags } from "../_platform.ts";
import { printJson, projectRoot } from "../_shared.ts";

interface ScheduleFlags extends PlatformFlags {
  json?: boolean;
}

export interface ScheduledEndpoint {
  id: string;
  name: string;
  schedule: {
    cron: string;
    timezone: string;
    input: unknown;
    lastRunAt: string | null;
    lastJobId: string | null;
    lastStatus: string | null;
    nextRunAt: string | null;
    skipped: number;
  };
}

const DOCUMENT = `query endpointSchedule($id: String!) { endpoint(id: $id) { id name schedule { cron timezone input lastRunAt lastJobId lastStatus nextRunAt skipped } } }`;

export function registerSchedule(cli: CAC): void {
  cli
    .command("schedule <action>", "Scheduled endpoints (schedule=): list, with their last and next runs")
    .option("--env <name>", "Environment (default: the app's only one)")
    .option("--app <name>", "App name (default: from svc.config.ts or the folder name)")
    .option("--json", "Print the schedules as JSON")
    .option("--root <dir>", "Project folder (default: current folder)")
    .example("svc schedule list --env production")
    .action(async (action: string, flags: ScheduleFlags) => {
      if (action !== "list") throw errors.CLI_USAGE(`svc schedule takes one action, list; not "${action}".`, "schedule");
      const { client } = await connect(projectRoot(flags));
      const app = await appName(flags, "schedule");
      const { environment } = await findEnvironment(client, app, flags.env);
      const found = await Promise.all(
        environment.endpoints
          .filter((e) => e.type === "QB")
          .map(async (e) => (await client.graphql<{ endpoint: ScheduledEndpoint | null }>("endpointSchedule", DOCUMENT, { id: e.id })).endpoint),
      );
      const scheduled = found.filter((e): e is ScheduledEndpoint => Boolean(e?.schedule));
      if (flags.json) return printJson({ ok: true, app, environment: environment.name, schedules: scheduled });
      if (scheduled.length === 0) {
        process.stdout.write(`No scheduled endpoints in ${app}/${environment.name} (Endpoint(..., schedule="0 3 * * *") adds one).\n`);
        return;
      }
      printTable(
        ["ENDPOINT", "CRON", "TIME ZONE", "LAST RUN", "LAST JOB", "NEXT RUN"],
        scheduled.map(({ name, schedule: s }) => [
          name,
          s.cron,
          s.timezone,
          s.lastRunAt ?? "never",
          s.lastJobId ? `${s.lastJobId} ${s.lastStatus ?? ""}`.trim() : "-",
          s.nextRunAt ?? "never",
        ]),
      );
    });
}
