/**
 * The svc command line: cac with one file per command under cli/commands/. `--version` and the
 * top-level help answer from package.json and a static table, loading no command module; any other
 * command line imports cac and the one command it names (docs/architecture.md, "Startup").
 */
import { readFileSync } from "node:fs";
import { packagePath } from "../core/package-root.ts";
import { commandFor, helpText } from "./commands/index.ts";

const argv = process.argv.slice(2);
const version = (JSON.parse(readFileSync(packagePath("package.json"), "utf8")) as { version: string }).version;
const only = (...flags: string[]) => argv.length === 1 && flags.includes(argv[0]!);
const load = commandFor(argv);

if (only("-v", "--version")) {
  process.stdout.write(`svc/${version} ${process.platform}-${process.arch} node-${process.version}\n`);
} else if (!load && (argv.length === 0 || only("-h", "--help"))) {
  process.stdout.write(helpText(version));
} else {
  const [{ cac }, { reportError }, { unknownCommand, usageError }] = await Promise.all([import("cac"), import("./_shared.ts"), import("./_did-you-mean.ts")]);
  const cli = cac("svc");
  if (load) (await load())(cli);
  // cac gives every `--no-x` flag "(default: true)", which reads as if the flag were on by default.
  cli.help((sections) => sections.map((section) => ({ ...section, body: section.body.replace(/^(\s+--no-\S+.*?)\s*\(default: true\)$/gm, "$1") })));
  cli.version(version);
  try {
    cli.parse(process.argv, { run: false });
    // With --help cac prints the command's help and unsets the match, leaving its action (`start`) in args.
    if (!cli.matchedCommand && cli.args.length > 0 && !cli.options.help) throw unknownCommand(String(cli.args[0]));
    if (!cli.matchedCommand && !cli.options.help && !cli.options.version) process.stdout.write(helpText(version));
    await cli.runMatchedCommand();
  } catch (error) {
    // cac reports bad flags and missing arguments as CACError: show them as usage errors, not crashes.
    const usage = (error as Error)?.name === "CACError" ? usageError(error as Error, cli) : error;
    process.exitCode = reportError(usage, Boolean(cli.options.json));
  }
}
