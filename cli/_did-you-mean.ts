/**
 * Typos on the command line: `svc biuld` → "did you mean `svc build`?", `svc build --anlyze` →
 * "did you mean `--analyze`?" (core/closest.ts picks the name).
 */
import type { CAC } from "cac";
import { closestName } from "../core/closest.ts";
import { errors, type SvcError } from "../core/errors.ts";
import { commands } from "./commands/index.ts";

export const unknownCommand = (name: string): SvcError => errors.UNKNOWN_COMMAND(name, closestName(name, Object.keys(commands)));

/** cac's usage error as CLI_USAGE; an unknown option names the command's closest one. */
export function usageError(error: Error, cli: CAC): SvcError {
  const unknown = /^Unknown option `(-{1,2})(.+)`$/.exec(error.message);
  const command = cli.matchedCommand;
  if (!unknown || !command) return errors.CLI_USAGE(error.message, cli.matchedCommandName);
  // cac camel-cases option names (--keep-bild → keepBild): compare without dashes and case
  const flags = [...command.options, ...cli.globalCommand.options].flatMap((option) =>
    option.rawName
      .replace(/[<[].*$/, "")
      .split(",")
      .map((flag) => flag.trim())
      .filter((flag) => flag.startsWith("--")),
  );
  const plain = (flag: string) => flag.replace(/-/g, "").toLowerCase();
  const byPlain = new Map(flags.map((flag) => [plain(flag), flag]));
  const nearest = closestName(plain(unknown[2]!), byPlain.keys());
  const hint = nearest ? ` Did you mean \`${byPlain.get(nearest)}\`?` : "";
  return errors.CLI_USAGE(`${error.message}.${hint}`, cli.matchedCommandName);
}
