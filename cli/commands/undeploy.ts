/** `svc undeploy [--env name] [--all] [--yes]`: delete the app's endpoints in one environment (or all of them). */
import type { CAC } from "cac";
import { findEnvironment, type PlatformClient, type PlatformEnvironment } from "../../core/client/index.ts";
import { mapLimit } from "../../core/map-limit.ts";
import { PROVISION_CONCURRENCY } from "../../plugins/index.ts";
import { appName, confirm, connect, endpointCount, printTable, type PlatformFlags } from "../_platform.ts";
import { printJson, projectRoot } from "../_shared.ts";

interface UndeployFlags extends PlatformFlags {
  all?: boolean;
}

export interface UndeployResult {
  app: string;
  deleted: Array<{ environment: string; name: string; id: string }>;
}

/** The environments `svc undeploy` acts on (same --env rules as deploy, nothing created). */
export async function undeployTargets(client: PlatformClient, app: string, flags: { env?: string; all?: boolean }): Promise<PlatformEnvironment[]> {
  if (flags.all) return client.listEnvironments(app);
  return [(await findEnvironment(client, app, flags.env)).environment];
}

export async function deleteEnvironmentEndpoints(client: PlatformClient, environments: PlatformEnvironment[]): Promise<UndeployResult["deleted"]> {
  const work = environments.flatMap((environment) =>
    environment.endpoints.map((endpoint) => ({ environment: environment.name, name: endpoint.name, id: endpoint.id })),
  );
  await mapLimit(work, PROVISION_CONCURRENCY, (item) => client.deleteEndpoint(item.id));
  return work;
}

export function registerUndeploy(cli: CAC): void {
  cli
    .command("undeploy", "Delete the app's endpoints in an environment")
    .option("--env <name>", "Environment (default: the app's only one)")
    .option("--all", "Every environment of the app")
    .option("--app <name>", "App name (default: from svc.config.ts or the folder name)")
    .option("--yes, -y", "Do not ask for confirmation")
    .option("--json", "Print the result as JSON")
    .option("--root <dir>", "Project folder (default: current folder)")
    .action(async (flags: UndeployFlags) => {
      const root = projectRoot(flags);
      const { client } = await connect(root);
      const app = await appName(flags, "undeploy");
      const environments = await undeployTargets(client, app, flags);
      const count = endpointCount(environments);
      const where = environments.map((environment) => environment.name).join(", ");
      if (count === 0) {
        if (flags.json) printJson({ ok: true, app, deleted: [] });
        else process.stderr.write(`No endpoints of ${app} in ${where || "any environment"}.\n`);
        return;
      }
      if (!(await confirm(`Delete ${count} endpoint(s) of ${app} in ${where}?`, flags, `delete ${count} endpoint(s) of ${app}`))) {
        process.stderr.write("Nothing deleted.\n");
        return;
      }
      const deleted = await deleteEnvironmentEndpoints(client, environments);
      if (flags.json) printJson({ ok: true, app, deleted });
      else {
        printTable(
          ["ENVIRONMENT", "ENDPOINT", "ID"],
          deleted.map((item) => [item.environment, item.name, item.id]),
        );
        process.stderr.write(`Deleted ${deleted.length} endpoint(s).\n`);
      }
    });
}
