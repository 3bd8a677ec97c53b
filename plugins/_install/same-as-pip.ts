/**
 * Makes a tree uv installed hold the files pip's would: uv leaves its `.lock` in the target and marks
 * every distribution REQUESTED, where pip marks only those the requirements named.
 */
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { normalizeName } from "../_requirements.ts";

export async function alignWithPip(target: string, requestedNames: ReadonlySet<string>): Promise<void> {
  await rm(join(target, ".lock"), { force: true });
  for (const entry of await readdir(target).catch(() => [] as string[])) {
    const name = /^(.+?)-[^-]+\.dist-info$/.exec(entry)?.[1];
    if (name && !requestedNames.has(normalizeName(name))) await rm(join(target, entry, "REQUESTED"), { force: true });
  }
}
