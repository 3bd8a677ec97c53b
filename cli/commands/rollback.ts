/**
 * `svc rollback [--env name] [--to build] [--yes]`: switch the environment back to an earlier build
 * (default: the newest other one in its history) through the deploy's own switch, with the endpoint
 * settings that build ran with; asks first on a terminal. docs/platform.md, "History and rollback".
 */
import type { CAC } from "cac";
import { findEnvironment } from "../../core/client/index.ts";
import { errors } from "../../core/errors.ts";
import { appName, confirm, connect, type PlatformFlags } from "../_platform.ts";
import { printJson, projectRoot } from "../_shared.ts";
import { changeText, deployHistory, type DeployEntry } from "./history.ts";

interface RollbackFlags extends PlatformFlags {
  to?: string;
}

const DOCUMENT = `mutation rollbackEnvironment($environmentId: String!, $buildId: String) {
  rollbackEnvironment(environmentId: $environmentId, buildId: $buildId) { from to changes { added changed removed } } }`;

export function registerRollback(cli: CAC): void {
  cli
    .command("rollback", "Switch an environment back to an earlier build (default: the previous one)")
    .option("--env <name>", "Environment (default: the app's only one)")
    .option("--to <build>", "The build to go back to (`svc history` lists them)")
    .option("--app <name>", "App name (default: from svc.config.ts or the folder name)")
    .option("--yes, -y", "Do not ask for confirmation")
    .option("--json", "Print the result as JSON")
    .option("--root <dir>", "Project folder (default: current folder)")
    .action(async (flags: RollbackFlags) => {
      const { client } = await connect(projectRoot(flags));
      const app = await appName(flags, "rollback");
      const { environment } = await findEnvironment(client, app, flags.env);
      const history = await deployHistory(client, environment.id);
      const target = flags.to ? history.find((d) => d.buildId === flags.to) : history.find((d) => d.buildId !== environment.activeBuildId);
      if (!target)
        throw errors.NOT_FOUND(
          `Build to roll ${app}/${environment.name} back to`,
          flags.to ?? "(previous)",
          "`svc history` lists the builds kept for rollback.",
        );
      const question = `Switch ${app}/${environment.name} from build ${environment.activeBuildId ?? "none"} back to ${target.buildId} (deployed ${target.at})?`;
      if (!(await confirm(question, flags, `roll ${app}/${environment.name} back`))) return void process.stderr.write("Nothing changed.\n");
      const done = (
        await client.graphql<{ rollbackEnvironment: { from: string | null; to: string; changes: DeployEntry["changes"] } }>("rollbackEnvironment", DOCUMENT, {
          environmentId: environment.id,
          buildId: target.buildId,
        })
      ).rollbackEnvironment;
      if (flags.json) return printJson({ ok: true, app, environment: environment.name, ...done });
      process.stdout.write(`Rolled ${app}/${environment.name} back from build ${done.from ?? "none"} to ${done.to}.\n`);
      const { added, changed, removed } = done.changes;
      for (const [label, names] of [
        ["back", added],
        ["changed", changed],
        ["removed", removed],
      ] as const)
        if (names.length) process.stdout.write(`  ${label}: ${names.join(", ")}\n`);
      if (!changeText(done.changes)) process.stdout.write("  the endpoints' settings are the same; their workers now run the older build\n");
    });
}
