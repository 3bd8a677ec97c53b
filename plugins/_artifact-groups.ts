/**
 * Groups artifact entries by what a user can act on: a top-level folder or file of the app, and
 * one group per installed package under `site-packages/` (its folder, `.libs` and `.dist-info`
 * together). Shared by svc:size-guard and svc:analyze.
 */
import { formatBytes } from "../core/format-bytes.ts";
import type { ArtifactEntry } from "../core/types.ts";
import { normalizeName } from "./_requirements.ts";

export interface EntryGroup {
  /** `site-packages/pillow`, `svc/`, `workers/`, `requirements.txt`. */
  name: string;
  size: number;
  files: number;
}

export function groupKey(path: string): string {
  const parts = path.split("/");
  if (parts[0] === "site-packages" && parts.length >= 2) {
    const top = parts[1]!
      .replace(/-[^-]+\.(?:dist|egg)-info$/, "")
      .replace(/\.(?:libs|data)$/, "")
      .replace(/\.py$/, "");
    return `site-packages/${normalizeName(top)}`;
  }
  return parts.length > 1 ? `${parts[0]}/` : parts[0]!;
}

/** Groups, biggest first (ties by name, so output is stable). */
export function groupEntries(entries: ArtifactEntry[]): EntryGroup[] {
  const groups = new Map<string, EntryGroup>();
  for (const entry of entries) {
    const name = groupKey(entry.path);
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
