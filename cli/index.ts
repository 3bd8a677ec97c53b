/** The svc command line: cac with one file per command under cli/commands/. */
import { cac } from "cac";
import { commandsFor } from "./commands/index.ts";
import { errors } from "../core/errors.ts";
import { reportError } from "./_shared.ts";

const cli = cac("svc");
for (const register of await Promise.all(commandsFor(process.argv.slice(2)).map((load) => load()))) register(cli);
cli.help();
cli.version(process.env.npm_package_version ?? "0.1.0");

try {
  cli.parse(process.argv, { run: false });
  if (!cli.matchedCommand && cli.args.length > 0) {
    throw errors.UNKNOWN_COMMAND(String(cli.args[0]));
  }
  if (!cli.matchedCommand && !cli.options.help && !cli.options.version) cli.outputHelp();
  await cli.runMatchedCommand();
} catch (error) {
  // cac reports bad flags and missing arguments as CACError: show them as usage errors, not crashes.
  const usage = (error as Error)?.name === "CACError" ? errors.CLI_USAGE((error as Error).message, cli.matchedCommandName) : error;
  process.exitCode = reportError(usage, Boolean(cli.options.json));
}
