/**
 * What `svc build --analyze` tells about an artifact, once, for the terminal and the treemap page:
 * its entries in colour groups (the app's own files, each installed package, svc's runtime, the
 * generated files: docs/contracts.md section 1), its compressed and unpacked sizes against the
 * limit, and the ten largest packages.
 */
import { formatBytes } from "../../core/format-bytes.ts";
import type { Artifact } from "../../core/types.ts";
import { groupKey, type Distributions } from "../_artifact-groups.ts";

export type GroupKind = "app" | "package" | "runtime" | "generated";

export interface ColourGroup {
  /** "app files", "svc runtime", "generated files" or the package's name. */
  name: string;
  kind: GroupKind;
  colour: string;
  size: number;
  files: number;
  /** Entries under the group's root, by their next path segment (folder/ or file), biggest first. */
  children: Array<{ name: string; size: number; files: number }>;
}

export interface AnalysisSummary {
  app: string;
  compressed: number;
  unpacked: number;
  limit: number;
  groups: ColourGroup[];
  /** The ten largest packages, biggest first. */
  topPackages: ColourGroup[];
}

const GENERATED = new Set(["svc_manifest.json", "requirements.txt"]);
const KIND_COLOURS: Record<Exclude<GroupKind, "package">, string> = { app: "#2f6db5", runtime: "#e8871e", generated: "#9a9a9a" };
/** Packages take these in turn, biggest first (none is the app's blue, the runtime's orange or grey). */
const PACKAGE_COLOURS = ["#3a9e5a", "#9467bd", "#d64a4b", "#17a5b8", "#b5a21b", "#e377c2", "#8c564b", "#5ab4ac", "#7f9c2e", "#c49a6c"];
const KIND_ORDER: GroupKind[] = ["app", "package", "runtime", "generated"];

/** The palette first, then hues a golden angle apart, so each package has a colour of its own. */
const packageColour = (i: number): string => PACKAGE_COLOURS[i] ?? `hsl(${Math.round((i * 137.508) % 360)}, 40%, ${i % 2 ? 38 : 52}%)`;

function classify(path: string, distributions?: Distributions): { kind: GroupKind; name: string; rest: string } {
  const parts = path.split("/");
  if (parts[0] === "site-packages" && parts.length >= 2) {
    const key = groupKey(path, distributions);
    // scripts no distribution claims: a folder of the install, not a package
    if (key.endsWith("/")) return { kind: "generated", name: "console scripts (site-packages/bin/)", rest: parts.slice(2).join("/") };
    return { kind: "package", name: key.slice("site-packages/".length), rest: parts.slice(1).join("/") };
  }
  if (parts[0] === "svc" && parts.length > 1) return { kind: "runtime", name: "svc runtime", rest: parts.slice(1).join("/") };
  if ((parts[0] === "handlers" && parts.length > 1) || (parts.length === 1 && GENERATED.has(path)))
    return { kind: "generated", name: "generated files", rest: path };
  return { kind: "app", name: "app files", rest: path };
}

export function summarize(
  artifact: Pick<Artifact, "entries" | "size" | "unpackedSize">,
  app: string,
  limit: number,
  distributions?: Distributions,
): AnalysisSummary {
  const groups = new Map<string, ColourGroup & { byChild: Map<string, { name: string; size: number; files: number }> }>();
  for (const entry of artifact.entries) {
    const { kind, name, rest } = classify(entry.path, distributions);
    const key = `${kind}\0${name}`;
    const group = groups.get(key) ?? { name, kind, colour: "", size: 0, files: 0, children: [], byChild: new Map() };
    group.size += entry.size;
    group.files += 1;
    const segments = rest.split("/");
    const childName = segments.length > 1 ? `${segments[0]}/` : segments[0]!;
    const child = group.byChild.get(childName) ?? { name: childName, size: 0, files: 0 };
    child.size += entry.size;
    child.files += 1;
    group.byChild.set(childName, child);
    groups.set(key, group);
  }
  const bySize = <T extends { size: number; name: string }>(a: T, b: T) => b.size - a.size || (a.name < b.name ? -1 : 1);
  const packages = [...groups.values()].filter((g) => g.kind === "package").sort(bySize);
  for (const [i, group] of packages.entries()) group.colour = packageColour(i);
  const ordered = [...groups.values()]
    .map((group) => {
      if (group.kind !== "package") group.colour = KIND_COLOURS[group.kind];
      const { byChild, ...rest } = group;
      return { ...rest, children: [...byChild.values()].sort(bySize) };
    })
    .sort((a, b) => KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind) || bySize(a, b));
  return {
    app,
    compressed: artifact.size,
    unpacked: artifact.unpackedSize,
    limit,
    groups: ordered,
    topPackages: ordered.filter((g) => g.kind === "package").slice(0, 10),
  };
}

const share = (part: number, whole: number) => (whole > 0 ? `${((part / whole) * 100).toFixed(1)} %` : "-");

/** The header's facts as text lines (the terminal prints these; the page shows the same). */
export function formatSummary(summary: AnalysisSummary): string {
  const lines = [
    `artifact of ${summary.app}: ${formatBytes(summary.compressed)} compressed (${share(summary.compressed, summary.limit)} of the ${formatBytes(summary.limit)} limit), ${formatBytes(summary.unpacked)} unpacked (${share(summary.unpacked, summary.limit)} of it)`,
    `groups: ${summary.groups.map((g) => `${g.name} ${formatBytes(g.size)}`).join(" · ")}`,
  ];
  if (summary.topPackages.length === 0) lines.push("packages: none installed");
  else {
    lines.push(`largest packages (${summary.topPackages.length} of ${summary.groups.filter((g) => g.kind === "package").length}):`);
    const width = Math.max(...summary.topPackages.map((p) => p.name.length));
    for (const p of summary.topPackages)
      lines.push(`  ${p.name.padEnd(width)}  ${formatBytes(p.size).padStart(9)}  ${share(p.size, summary.unpacked).padStart(7)}`);
  }
  return lines.join("\n");
}
