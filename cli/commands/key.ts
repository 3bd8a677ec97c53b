/**
 * `svc key create NAME --role admin|deploy|invoke|read [--app A] [--env E] | list | revoke NAME`:
 * named API keys with a role and a scope (admin keys only). The secret is printed once, at create:
 * the platform keeps its hash. docs/platform.md, "Keys and roles".
 */
import type { CAC } from "cac";
import type { PlatformClient } from "../../core/client/index.ts";
import { errors } from "../../core/errors.ts";
import { confirm, connect, printTable, type PlatformFlags } from "../_platform.ts";
import { printJson, projectRoot } from "../_shared.ts";

interface KeyFlags extends PlatformFlags {
  role?: string;
}

interface ApiKey {
  name: string;
  role: string;
  app: string | null;
  env: string | null;
  createdAt: string;
}

const FIELDS = "name role app env createdAt";
const documents = {
  list: `query apiKeys { apiKeys { ${FIELDS} } }`,
  create: `mutation apiKeyCreate($input: ApiKeyCreateInput!) { apiKeyCreate(input: $input) { secret key { ${FIELDS} } } }`,
  revoke: "mutation apiKeyRevoke($name: String!) { apiKeyRevoke(name: $name) }",
};

const scopeText = (k: ApiKey) => (k.app ? `app ${k.app}${k.env ? ` env ${k.env}` : ""}` : "platform-wide");

async function create(client: PlatformClient, name: string, flags: KeyFlags): Promise<void> {
  if (!flags.role) throw errors.CLI_USAGE("svc key create NAME --role admin|deploy|invoke|read [--app A] [--env E]", "key");
  const input = { name, role: flags.role, app: flags.app ?? null, env: flags.env ?? null };
  const { apiKeyCreate } = await client.graphql<{ apiKeyCreate: { secret: string; key: ApiKey } }>("apiKeyCreate", documents.create, { input });
  if (flags.json) return printJson({ ok: true, ...apiKeyCreate });
  process.stderr.write(`Created key ${name} (role ${apiKeyCreate.key.role}, ${scopeText(apiKeyCreate.key)}). Its secret, shown this once:\n`);
  process.stdout.write(`${apiKeyCreate.secret}\n`);
}

export function registerKey(cli: CAC): void {
  cli
    .command("key <action> [name]", "Named API keys with a role and scope: create <name> --role R [--app A] [--env E] | list | revoke <name>")
    .option("--role <role>", "create: admin | deploy | invoke | read")
    .option("--app <name>", "create: the app the key is scoped to (default: platform-wide)")
    .option("--env <name>", "create: and the environment of that app")
    .option("--yes, -y", "Do not ask for confirmation (revoke)")
    .option("--json", "Print the result as JSON")
    .option("--root <dir>", "Project folder (default: current folder)")
    .action(async (action: string, name: string | undefined, flags: KeyFlags) => {
      if (action !== "list" && !name) throw errors.CLI_USAGE(`Usage: svc key ${action} <name>`, "key");
      if (!["create", "list", "revoke"].includes(action))
        throw errors.CLI_USAGE(`Unknown action "${action}": use svc key create <name> --role R | list | revoke <name>.`, "key");
      const { client } = await connect(projectRoot(flags));
      if (action === "create") return create(client, name!, flags);
      if (action === "list") {
        const { apiKeys } = await client.graphql<{ apiKeys: ApiKey[] }>("apiKeys", documents.list);
        if (flags.json) return printJson({ ok: true, keys: apiKeys });
        return printTable(
          ["NAME", "ROLE", "SCOPE", "CREATED"],
          apiKeys.map((k) => [k.name, k.role, scopeText(k), k.createdAt]),
        );
      }
      if (!(await confirm(`Revoke key ${name}? Whoever holds it is refused from now on.`, flags, `revoke key ${name}`)))
        return void process.stderr.write("Nothing revoked.\n");
      await client.graphql("apiKeyRevoke", documents.revoke, { name });
      if (flags.json) return printJson({ ok: true, revoked: name });
      process.stderr.write(`Revoked key ${name}.\n`);
    });
}
