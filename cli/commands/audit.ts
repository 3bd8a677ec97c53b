/**
 * `svc audit [--limit n] [--json]`: the platform's record of management actions, newest first —
 * when, which key, what, on which app, and how it ended (admin keys only). docs/platform.md, "Audit".
 */
import type { CAC } from "cac";
import { errors } from "../../core/errors.ts";
import { connect, printTable, type PlatformFlags } from "../_platform.ts";
import { printJson, projectRoot } from "../_shared.ts";

interface AuditFlags extends PlatformFlags {
  limit?: number;
}

interface AuditEntry {
  at: string;
  keyName: string;
  action: string;
  app: string | null;
  target: string | null;
  outcome: string;
}

const DOCUMENT = "query auditLog($limit: Int) { auditLog(limit: $limit) { at keyName action app target outcome } }";

export function registerAudit(cli: CAC): void {
  cli
    .command("audit", "Show who deployed, rolled back, deleted or changed keys and secrets, newest first")
    .option("--limit <n>", "How many entries (default 100, at most 10000)")
    .option("--json", "Print the result as JSON")
    .option("--root <dir>", "Project folder (default: current folder)")
    .action(async (flags: AuditFlags) => {
      const limit = flags.limit === undefined ? undefined : Number(flags.limit);
      if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 10_000))
        throw errors.CLI_USAGE(`--limit takes a whole number from 1 to 10000, not "${flags.limit}".`, "audit");
      const { client } = await connect(projectRoot(flags));
      const { auditLog } = await client.graphql<{ auditLog: AuditEntry[] }>("auditLog", DOCUMENT, { limit });
      if (flags.json) return printJson({ ok: true, entries: auditLog });
      printTable(
        ["WHEN", "KEY", "ACTION", "APP", "TARGET", "OUTCOME"],
        auditLog.map((a) => [a.at, a.keyName, a.action, a.app, a.target, a.outcome]),
      );
    });
}
