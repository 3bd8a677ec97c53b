/**
 * Groups artifact entries by what a user can act on: a top-level folder or file of the app, and
 * one group per installed distribution under `site-packages/` — every top-level entry its
 * `*.dist-info/RECORD` lists (python-dateutil's `dateutil/` with its dist-info, a package's console
 * scripts in `bin/`), else by name (its folder, `.libs` and `.dist-info` together). Scripts no RECORD
 * claims are `site-packages/bin/`, a folder, never a package. Shared by svc:size-guard and svc:analyze.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { formatBytes } from "../core/errors.ts";
import type { ArtifactEntry } from "../core/types.ts";
import { normalizeName } from "./_requirements.ts";

export interface EntryGroup {
  /** `site-packages/pillow`, `svc/`, `workers/`, `requirements.txt`. */
  name: string;
  size: number;
  files: number;
}

/** Top-level entry of site-packages (`dateutil`, `six.py`, `bin/<script>`) → its distribution's normalised name. */
export type Distributions = ReadonlyMap<string, string>;

/** The first field of a RECORD line (CSV: a path with a comma is quoted). */
const recordPath = (line: string): string => (line.startsWith('"') ? line.slice(1, line.indexOf('"', 1)) : line.split(",")[0]!);

/** Reads each `*.dist-info/RECORD` of the installed dependencies (none: an empty map). */
export async function distributionsOf(depsDir: string | undefined): Promise<Distributions> {
  const out = new Map<string, string>();
  if (!depsDir) return out;
  const entries = await readdir(depsDir).catch(() => [] as string[]);
  for (const info of entries.filter((name) => name.endsWith(".dist-info"))) {
    const dist = normalizeName(info.replace(/-[^-]+\.dist-info$/, ""));
    const record = await readFile(join(depsDir, info, "RECORD"), "utf8").catch(() => "");
    for (const line of record.split(/\r?\n/)) {
      const path = recordPath(line);
      if (!path) continue;
      const script = /(?:^|\/)bin\/([^/]+)$/.exec(path);
      const key = path.startsWith("../") ? (script ? `bin/${script[1]}` : undefined) : path.split("/")[0];
      if (key && !out.has(key)) out.set(key, dist);
    }
  }
  return out;
}

export function groupKey(path: string, distributions?: Distributions): string {
  const parts = path.split("/");
  if (parts[0] === "site-packages" && parts.length >= 2) {
    const known = distributions?.get(parts[1] === "bin" && parts.length > 2 ? `bin/${parts[2]}` : parts[1]!);
    if (known) return `site-packages/${known}`;
    if (parts[1] === "bin" && parts.length > 2) return "site-packages/bin/";
    const top = parts[1]!
      .replace(/-[^-]+\.(?:dist|egg)-info$/, "")
      .replace(/\.(?:libs|data)$/, "")
      .replace(/\.py$/, "");
    return `site-packages/${normalizeName(top)}`;
  }
  return parts.length > 1 ? `${parts[0]}/` : parts[0]!;
}

/** Groups, biggest first (ties by name, so output is stable). */
export function groupEntries(entries: ArtifactEntry[], distributions?: Distributions): EntryGroup[] {
  const groups = new Map<string, EntryGroup>();
  for (const entry of entries) {
    const name = groupKey(entry.path, distributions);
    const group = groups.get(name) ?? { name, size: 0, files: 0 };
    group.size += entry.size;
    group.files += 1;
    groups.set(name, group);
  }
  return [...groups.values()].sort((a, b) => b.size - a.size || (a.name < b.name ? -1 : 1));
}

/** A plain-text table: name, size, share of the total, file count. */
export function formatGroupTable(groups: EntryGroup[], total: number, limit = 10): string {
  const shown = groups.slice(0, limit);
  const width = Math.max(12, ...shown.map((g) => g.name.length));
  const lines = [`  ${"entry".padEnd(width)}  ${"size".padStart(9)}  ${"share".padStart(6)}  files`];
  for (const group of shown) {
    const share = total > 0 ? `${((group.size / total) * 100).toFixed(1)}%` : "-";
    lines.push(`  ${group.name.padEnd(width)}  ${formatBytes(group.size).padStart(9)}  ${share.padStart(6)}  ${group.files}`);
  }
  if (groups.length > limit) lines.push(`  … and ${groups.length - limit} more`);
  return lines.join("\n");
}
