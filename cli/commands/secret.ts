/**
 * `svc secret create <name> | list | delete <name>`: secrets on the platform. A value comes from
 * stdin (typed without echo at a terminal, or piped) or from `--from-env VAR`, never from the
 * command line (argv shows in `ps` and shell history); `list` shows names only.
 * docs/platform.md, "Secrets".
 */
import type { CAC } from "cac";
import type { PlatformClient, PlatformSecret } from "../../core/client/index.ts";
import { errors } from "../../core/errors.ts";
import { confirm, connect, printTable, type PlatformFlags } from "../_platform.ts";
import { printJson, projectRoot } from "../_shared.ts";

interface SecretFlags extends PlatformFlags {
  fromEnv?: string;
}

/** The whole of stdin, one trailing newline dropped (`echo value | svc secret create x`). */
async function readStdin(): Promise<string> {
  const stdin = process.stdin;
  if (stdin.isTTY) return readHidden();
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

/** One line typed at a terminal, not echoed. */
function readHidden(): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write("Value (not shown; Enter ends it): ");
  stdin.setRawMode(true);
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = "";
    const onData = (chunk: Buffer) => {
      for (const char of chunk.toString("utf8")) {
        if (char === "\r" || char === "\n") return finish(() => resolve(value));
        if (char === "\u0003")
          return finish(() => reject(errors.CONFIRMATION_DECLINED("create the secret", "Run it again and type the value, or pipe it in.")));
        if (char === "\u007f") value = value.slice(0, -1);
        else value += char;
      }
    };
    const finish = (done: () => void) => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
      done();
    };
    stdin.on("data", onData);
  });
}

async function secretValue(flags: SecretFlags): Promise<string> {
  if (flags.fromEnv !== undefined) {
    const value = process.env[flags.fromEnv];
    if (value === undefined) throw errors.CLI_USAGE(`--from-env ${flags.fromEnv}: that variable is not set.`, "secret");
    return value;
  }
  return readStdin();
}

export async function secretCommand(client: PlatformClient, action: string, name: string | undefined, flags: SecretFlags): Promise<unknown> {
  switch (action) {
    case "list":
      return { secrets: await client.listSecrets() };
    case "create": {
      if (!name) throw errors.CLI_USAGE("Usage: svc secret create <name> (the value from stdin or --from-env VAR)", "secret");
      return { secret: await client.createSecret(name, await secretValue(flags)) };
    }
    case "delete": {
      if (!name) throw errors.CLI_USAGE("Usage: svc secret delete <name>", "secret");
      if (!(await client.listSecrets()).some((s) => s.name === name)) throw errors.SECRET_NOT_FOUND(name);
      if (!(await confirm(`Delete secret ${name}? Workers that reference it will not start.`, flags, `delete secret ${name}`))) return undefined;
      await client.deleteSecret(name);
      return { deleted: name };
    }
    default:
      throw errors.CLI_USAGE(`Unknown action "${action}": use svc secret create <name> | list | delete <name>.`, "secret");
  }
}

export function registerSecret(cli: CAC): void {
  cli
    .command("secret <action> [name]", "Manage secrets on the platform: create <name> (value from stdin or --from-env) | list | delete <name>")
    .option("--from-env <var>", "create: take the value from this environment variable instead of stdin")
    .option("--yes, -y", "Do not ask for confirmation (delete)")
    .option("--json", "Print the result as JSON")
    .option("--root <dir>", "Project folder, for its .env (default: current folder)")
    .action(async (action: string, name: string | undefined, flags: SecretFlags) => {
      // `svc secret create name value`: refused before anything is sent (argv shows in ps and shell history)
      if (cli.args.length > 2)
        throw errors.CLI_USAGE(
          'A secret\'s value never comes from the command line: pipe it in (`printf %s "$VALUE" | svc secret create <name>`) or pass --from-env VAR.',
          "secret",
        );
      const { client } = await connect(projectRoot(flags));
      const result = (await secretCommand(client, action, name, flags)) as
        | { secrets?: PlatformSecret[]; secret?: PlatformSecret; deleted?: string }
        | undefined;
      if (!result) return void process.stderr.write("Nothing deleted.\n");
      if (flags.json) return printJson({ ok: true, ...result });
      if (result.secrets)
        printTable(
          ["NAME", "ID", "CREATED"],
          result.secrets.map((s) => [s.name, s.id, s.createdAt]),
        );
      else if (result.secret)
        process.stdout.write(`Created secret ${result.secret.name}. Reference it in an endpoint's env as "{{ PLATFORM_SECRET_${result.secret.name} }}".\n`);
      else if (result.deleted) process.stdout.write(`Deleted secret ${result.deleted}.\n`);
    });
}
