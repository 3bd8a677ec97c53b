/**
 * `svc history [--env name] [--json]`: the environment's deploys and rollbacks, newest first — build,
 * time, the key that made it, the git commit (`+dirty` when the folder had uncommitted changes) and
 * the endpoints it added, changed and removed. docs/platform.md, "History and rollback".
 */
import type { CAC } from "cac";
import { findEnvironment, type PlatformClient } from "../../core/client/index.ts";
import { appName, connect, printTable, type PlatformFlags } from "../_platform.ts";
import { printJson, projectRoot } from "../_shared.ts";

export interface DeployEntry {
  buildId: string;
  kind: string;
  keyName: string;
  at: string;
  gitCommit: string | null;
  gitDirty: boolean | null;
  changes: { added: string[]; changed: string[]; removed: string[] };
  active: boolean;
}

const DOCUMENT = `query deployHistory($environmentId: String!) { deployHistory(environmentId: $environmentId) {
  buildId kind keyName at gitCommit gitDirty changes { added changed removed } active } }`;

export async function deployHistory(client: PlatformClient, environmentId: string): Promise<DeployEntry[]> {
  return (await client.graphql<{ deployHistory: DeployEntry[] }>("deployHistory", DOCUMENT, { environmentId })).deployHistory;
}

/** "+a -b ~c": the endpoints added, removed and changed. */
export const changeText = (c: DeployEntry["changes"]): string =>
  [...c.added.map((n) => `+${n}`), ...c.removed.map((n) => `-${n}`), ...c.changed.map((n) => `~${n}`)].join(" ");

const commitText = (d: DeployEntry) => (d.gitCommit ? `${d.gitCommit.slice(0, 12)}${d.gitDirty ? "+dirty" : ""}` : "");

export function registerHistory(cli: CAC): void {
  cli
    .command("history", "List the deploys and rollbacks of an environment, newest first")
    .option("--env <name>", "Environment (default: the app's only one)")
    .option("--app <name>", "App name (default: from svc.config.ts or the folder name)")
    .option("--json", "Print the result as JSON")
    .option("--root <dir>", "Project folder (default: current folder)")
    .action(async (flags: PlatformFlags) => {
      const { client } = await connect(projectRoot(flags));
      const app = await appName(flags, "history");
      const { environment } = await findEnvironment(client, app, flags.env);
      const entries = await deployHistory(client, environment.id);
      if (flags.json) return printJson({ ok: true, app, environment: environment.name, deploys: entries });
      printTable(
        ["BUILD", "WHEN", "KIND", "KEY", "COMMIT", "ENDPOINTS"],
        entries.map((d) => [`${d.buildId}${d.active ? " *" : ""}`, d.at, d.kind, d.keyName, commitText(d), changeText(d.changes)]),
      );
    });
}
