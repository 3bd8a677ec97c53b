/** The svc command line: cac with one file per command under cli/commands/. */
import { cac } from "cac";
import { commands } from "./commands/index.ts";
import { reportError } from "./_shared.ts";

const cli = cac("svc");
for (const register of commands) register(cli);
cli.help();
cli.version(process.env.npm_package_version ?? "0.1.0");

try {
  cli.parse(process.argv, { run: false });
  if (!cli.matchedCommand && cli.args.length > 0) {
    throw new Error(`Unknown command "${cli.args[0]}". Run \`svc --help\` for the list of commands.`);
  }
  if (!cli.matchedCommand && !cli.options.help && !cli.options.version) cli.outputHelp();
  await cli.runMatchedCommand();
} catch (error) {
  process.exitCode = reportError(error, Boolean(cli.options.json));
}
