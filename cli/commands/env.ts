/** `svc env list | get <name> | create <name> | delete <name>`: the app's environments. */
import type { CAC } from "cac";
import type { PlatformClient, PlatformEnvironment } from "../../core/client/index.ts";
import { ENVIRONMENTS_REMEDY, errors } from "../../core/errors.ts";
import { appName, confirm, connect, printTable, type PlatformFlags } from "../_platform.ts";
import { printJson, projectRoot } from "../_shared.ts";
import { deleteEnvironmentEndpoints } from "./undeploy.ts";

const envRow = (environment: PlatformEnvironment) => [environment.name, environment.id, environment.activeBuildId, environment.endpoints.length];
const ENV_HEADERS = ["NAME", "ID", "ACTIVE BUILD", "ENDPOINTS"];
const ENDPOINT_HEADERS = ["ENDPOINT", "ID", "TYPE", "WORKERS", "URL"];

/** The environment's endpoints, under a heading naming it (`svc env get`, `svc app get`). */
export function printEnvironmentEndpoints(environment: PlatformEnvironment): void {
  process.stdout.write(`\nEnvironment ${environment.name} (build ${environment.activeBuildId ?? "none"}):\n`);
  printTable(
    ENDPOINT_HEADERS,
    environment.endpoints.map((endpoint) => [endpoint.name, endpoint.id, endpoint.type, `${endpoint.workersMin}-${endpoint.workersMax}`, endpoint.url]),
  );
}

/** The app's environment named for `get` / `delete`: CLI_USAGE without a name, NOT_FOUND when there is none. */
async function namedEnvironment(client: PlatformClient, app: string, action: string, name: string | undefined): Promise<PlatformEnvironment> {
  if (!name) throw errors.CLI_USAGE(`Usage: svc env ${action} <name>`, "env");
  const environment = (await client.getApp(app))?.environments.find((item) => item.name === name);
  if (!environment) throw errors.NOT_FOUND(`Environment of app "${app}"`, name, ENVIRONMENTS_REMEDY);
  return environment;
}

export async function envCommand(client: PlatformClient, app: string, action: string, name: string | undefined, flags: PlatformFlags): Promise<unknown> {
  switch (action) {
    case "list": {
      const found = await client.getApp(app);
      return { app, environments: found?.environments ?? [] };
    }
    case "get":
      return { app, environment: await namedEnvironment(client, app, action, name) };
    case "create": {
      if (!name) throw errors.CLI_USAGE("Usage: svc env create <name>", "env");
      const found = (await client.getApp(app)) ?? (await client.createApp(app));
      if (found.environments.some((environment) => environment.name === name))
        throw errors.PLATFORM_ERROR("createEnvironment", `environment "${name}" already exists in app "${app}"`);
      return { app, environment: await client.createEnvironment(found.id, name) };
    }
    case "delete": {
      const environment = await namedEnvironment(client, app, action, name);
      const detail = environment.endpoints.length ? ` and its ${environment.endpoints.length} endpoint(s)` : "";
      if (!(await confirm(`Delete environment ${name} of ${app}${detail}?`, flags, `delete environment ${name}`))) return undefined;
      // Endpoints first: an environment must not leave endpoints running (and billing) behind.
      const deleted = await deleteEnvironmentEndpoints(client, [environment]);
      await client.deleteEnvironment(environment.id);
      return { app, deleted: { environment: environment.name, id: environment.id, endpoints: deleted } };
    }
    default:
      throw errors.CLI_USAGE(`Unknown action "${action}": use svc env list | get <name> | create <name> | delete <name>.`, "env");
  }
}

export function registerEnv(cli: CAC): void {
  cli
    .command("env <action> [name]", "Manage the app's environments: list | get <name> | create <name> | delete <name>")
    .option("--app <name>", "App name (default: from svc.config.ts or the folder name)")
    .option("--yes, -y", "Do not ask for confirmation (delete)")
    .option("--json", "Print the result as JSON")
    .option("--root <dir>", "Project folder (default: current folder)")
    .action(async (action: string, name: string | undefined, flags: PlatformFlags) => {
      const { client } = await connect(projectRoot(flags));
      const app = await appName(flags, "env");
      const result = (await envCommand(client, app, action, name, flags)) as
        | { environments?: PlatformEnvironment[]; environment?: PlatformEnvironment; deleted?: { environment: string; endpoints: unknown[] } }
        | undefined;
      if (!result) return void process.stderr.write("Nothing deleted.\n");
      if (flags.json) return printJson({ ok: true, ...result });
      if (result.environments) printTable(ENV_HEADERS, result.environments.map(envRow));
      else if (result.environment) {
        printTable(ENV_HEADERS, [envRow(result.environment)]);
        if (action === "get") printEnvironmentEndpoints(result.environment);
      } else if (result.deleted)
        process.stdout.write(`Deleted environment ${result.deleted.environment} of ${app} (${result.deleted.endpoints.length} endpoint(s)).\n`);
    });
}
