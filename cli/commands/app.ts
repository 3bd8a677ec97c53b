/** `svc app list | get <name> | create <name> | delete <name>`: apps on the platform. */
import type { CAC } from "cac";
import type { PlatformApp, PlatformClient } from "../../core/client/index.ts";
import { APPS_REMEDY, errors } from "../../core/errors.ts";
import { confirm, connect, endpointCount, printTable, type PlatformFlags } from "../_platform.ts";
import { printEnvironmentEndpoints } from "./env.ts";
import { printJson, projectRoot } from "../_shared.ts";
import { deleteEnvironmentEndpoints } from "./undeploy.ts";

const appRow = (app: PlatformApp) => [
  app.name,
  app.id,
  app.environments.map((environment) => environment.name).join(","),
  endpointCount(app.environments),
  app.createdAt,
];
const APP_HEADERS = ["NAME", "ID", "ENVIRONMENTS", "ENDPOINTS", "CREATED"];

/** The app named for `get` / `delete`: CLI_USAGE without a name, NOT_FOUND when there is none. */
async function namedApp(client: PlatformClient, action: string, name: string | undefined): Promise<PlatformApp> {
  if (!name) throw errors.CLI_USAGE(`Usage: svc app ${action} <name>`, "app");
  const app = await client.getApp(name);
  if (!app) throw errors.NOT_FOUND("App", name, APPS_REMEDY);
  return app;
}

export async function appCommand(client: PlatformClient, action: string, name: string | undefined, flags: PlatformFlags): Promise<unknown> {
  switch (action) {
    case "list":
      return { apps: await client.listApps() };
    case "get":
      return { app: await namedApp(client, action, name) };
    case "create": {
      if (!name) throw errors.CLI_USAGE("Usage: svc app create <name>", "app");
      if (await client.getApp(name)) throw errors.PLATFORM_ERROR("createApp", `app "${name}" already exists`);
      return { app: await client.createApp(name) };
    }
    case "delete": {
      const app = await namedApp(client, action, name);
      const count = endpointCount(app.environments);
      if (!(await confirm(`Delete app ${name} with ${app.environments.length} environment(s) and ${count} endpoint(s)?`, flags, `delete app ${name}`)))
        return undefined;
      const endpoints = await deleteEnvironmentEndpoints(client, app.environments);
      for (const environment of app.environments) await client.deleteEnvironment(environment.id);
      await client.deleteApp(app.id);
      return { deleted: { app: app.name, id: app.id, endpoints } };
    }
    default:
      throw errors.CLI_USAGE(`Unknown action "${action}": use svc app list | get <name> | create <name> | delete <name>.`, "app");
  }
}

export function registerApp(cli: CAC): void {
  cli
    .command("app <action> [name]", "Manage apps on the platform: list | get <name> | create <name> | delete <name>")
    .option("--yes, -y", "Do not ask for confirmation (delete)")
    .option("--json", "Print the result as JSON")
    .option("--root <dir>", "Project folder, for its .env (default: current folder)")
    .action(async (action: string, name: string | undefined, flags: PlatformFlags) => {
      const { client } = await connect(projectRoot(flags));
      const result = (await appCommand(client, action, name, flags)) as
        | { apps?: PlatformApp[]; app?: PlatformApp; deleted?: { app: string; endpoints: unknown[] } }
        | undefined;
      if (!result) return void process.stderr.write("Nothing deleted.\n");
      if (flags.json) return printJson({ ok: true, ...result });
      if (result.apps) printTable(APP_HEADERS, result.apps.map(appRow));
      else if (result.app) {
        printTable(APP_HEADERS, [appRow(result.app)]);
        if (action === "get") for (const environment of result.app.environments) printEnvironmentEndpoints(environment);
      } else if (result.deleted) process.stdout.write(`Deleted app ${result.deleted.app} (${result.deleted.endpoints.length} endpoint(s)).\n`);
    });
}
