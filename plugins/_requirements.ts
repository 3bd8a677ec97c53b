/**
 * requirements.txt reading and requirement merging (private to the dependency plugins).
 * Not a full PEP 508 parser: enough structure to name, dedupe and rank requirements; the line
 * itself is handed to pip unchanged.
 */
import { readFile } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import type { Requirement } from "../core/types.ts";

/** PEP 503 normalisation: `Foo_Bar.baz` → `foo-bar-baz`. */
export function normalizeName(name: string): string {
  return name.replace(/[-_.]+/g, "-").toLowerCase();
}

export interface ParsedRequirement {
  name: string;
  extras: string[];
  /** Version specifiers (`>=1.2`, `==2.0`), comma-separated parts. */
  specifiers: string[];
  marker?: string;
  /** `name @ url` or a bare URL / path. */
  url?: string;
}

const NAME = /^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[([^\]]*)\])?\s*(.*)$/;

/** Parses one requirement line (without options or comments); undefined when it names no project. */
export function parseRequirement(line: string): ParsedRequirement | undefined {
  const [body = "", ...markerParts] = splitMarker(line);
  const marker = markerParts.length ? markerParts.join(";").trim() : undefined;
  const text = body.trim();
  const named = /^[A-Za-z0-9][A-Za-z0-9._-]*\s*(?:\[[^\]]*\])?\s*@/.test(text);
  if (!named && (/^(?:[a-z+]+:\/\/|\.{0,2}\/)/i.test(text) || /\.(?:whl|tar\.gz|zip)$/i.test(text))) {
    // a bare URL or path: the name comes from #egg= or the wheel/sdist file name
    const egg = /[#&]egg=([A-Za-z0-9._-]+)/.exec(text)?.[1];
    const file = /([A-Za-z0-9._]+?)-\d[^/]*\.(?:whl|tar\.gz|zip)$/i.exec(text)?.[1];
    const name = egg ?? file;
    return name ? { name: normalizeName(name), extras: [], specifiers: [], marker, url: text } : undefined;
  }
  const match = NAME.exec(text);
  if (!match) return undefined;
  const [, name = "", extras = "", rest = ""] = match;
  const extrasList = extras.split(",").map((e) => e.trim()).filter(Boolean);
  const tail = rest.trim();
  if (tail.startsWith("@")) return { name: normalizeName(name), extras: extrasList, specifiers: [], marker, url: tail.slice(1).trim() };
  const specifiers = tail
    .replace(/^\(|\)$/g, "")
    .split(",")
    .map((s) => s.replace(/\s+/g, ""))
    .filter(Boolean);
  if (specifiers.some((s) => !/^(?:~=|===|==|!=|<=|>=|<|>)/.test(s))) return undefined;
  return { name: normalizeName(name), extras: extrasList, specifiers, marker };
}

/** `pkg>=1; python_version < "3.12"` → body and marker. After a URL, PEP 508 wants a space before `;`. */
function splitMarker(line: string): string[] {
  const index = line.includes("://") ? line.search(/\s;/) : line.indexOf(";");
  if (index < 0) return [line];
  return [line.slice(0, index), line.slice(index).replace(/^\s*;/, "")];
}

/** Formats a parsed requirement back into a pip line. */
export function formatRequirement(req: ParsedRequirement, originalName?: string): string {
  const name = originalName ?? req.name;
  const extras = req.extras.length ? `[${[...req.extras].sort().join(",")}]` : "";
  const main = req.url ? `${name}${extras} @ ${req.url}` : `${name}${extras}${req.specifiers.join(",")}`;
  return req.marker ? `${main}; ${req.marker}` : main;
}

/**
 * How specific a requirement is: a URL or an exact pin beats a range, a range beats a bare name.
 * Used to keep "the most specific spec" when the same project is required twice.
 */
export function specificity(req: ParsedRequirement): number {
  if (req.url) return 4;
  if (req.specifiers.some((s) => s.startsWith("==") && !s.includes("*"))) return 3;
  if (req.specifiers.length) return 1 + Math.min(req.specifiers.length, 2) / 3;
  return 0;
}

/** Options that apply to the whole pip run (not to one requirement). Kept aside and passed to pip. */
const GLOBAL_OPTIONS_WITH_VALUE = new Set([
  "-i",
  "--index-url",
  "--extra-index-url",
  "-f",
  "--find-links",
  "--trusted-host",
  "-c",
  "--constraint",
  "--no-binary",
  "--only-binary",
]);
const GLOBAL_FLAGS = new Set(["--pre", "--no-index", "--prefer-binary"]);

export interface RequirementsFile {
  requirements: Requirement[];
  /** pip options found in the file(s), in order, ready for argv. */
  pipOptions: string[];
}

/**
 * Reads a requirements file, following `-r`/`--requirement` includes. Sources are
 * `<path relative to root>:<line>`. Per-requirement options (`--hash=…`) are dropped: pip would
 * then demand hashes for every requirement, which the merged set cannot give.
 */
export async function readRequirementsFile(file: string, root: string, seen = new Set<string>()): Promise<RequirementsFile> {
  const absolute = resolve(file);
  const out: RequirementsFile = { requirements: [], pipOptions: [] };
  if (seen.has(absolute)) return out;
  seen.add(absolute);
  const text = await readFile(absolute, "utf8");
  const source = relative(root, absolute).split("\\").join("/") || absolute;
  for (const { line, number } of logicalLines(text)) {
    const tokens = line.split(/\s+/);
    const first = tokens[0] ?? "";
    if (first.startsWith("-")) {
      const [flag = "", inlineValue] = first.includes("=") ? [first.slice(0, first.indexOf("=")), first.slice(first.indexOf("=") + 1)] : [first, undefined];
      const value = inlineValue ?? tokens.slice(1).join(" ");
      if (flag === "-r" || flag === "--requirement") {
        const nested = await readRequirementsFile(isAbsolute(value) ? value : join(dirname(absolute), value), root, seen);
        out.requirements.push(...nested.requirements);
        out.pipOptions.push(...nested.pipOptions);
      } else if (flag === "-e" || flag === "--editable") {
        const parsed = parseRequirement(value);
        out.requirements.push({ spec: value, name: parsed?.name ?? value, source: `${source}:${number}` });
      } else if (flag === "-c" || flag === "--constraint") {
        out.pipOptions.push("--constraint", isAbsolute(value) ? value : join(dirname(absolute), value));
      } else if (GLOBAL_OPTIONS_WITH_VALUE.has(flag)) {
        out.pipOptions.push(flag, value);
      } else if (GLOBAL_FLAGS.has(flag)) {
        out.pipOptions.push(flag);
      } else {
        out.pipOptions.push(...tokens);
      }
      continue;
    }
    const spec = line.replace(/\s+--hash[=\s]\S+/g, "").trim();
    const parsed = parseRequirement(spec);
    out.requirements.push({ spec, name: parsed?.name ?? normalizeName(spec), source: `${source}:${number}` });
  }
  return out;
}

/** Lines without comments and blanks, continuation lines joined; `number` is the first line's. */
function logicalLines(text: string): Array<{ line: string; number: number }> {
  const result: Array<{ line: string; number: number }> = [];
  let pending = "";
  let start = 0;
  text.split(/\r?\n/).forEach((raw, index) => {
    if (!pending) start = index + 1;
    const withoutComment = raw.replace(/(^|\s)#.*$/, "");
    if (withoutComment.endsWith("\\")) {
      pending += withoutComment.slice(0, -1) + " ";
      return;
    }
    const line = (pending + withoutComment).trim();
    pending = "";
    if (line) result.push({ line, number: start });
  });
  if (pending.trim()) result.push({ line: pending.trim(), number: start });
  return result;
}

/**
 * Dedupes by normalised name, keeping the most specific requirement. Two ranges of the same
 * specificity are intersected (`>=1` + `<3` → `>=1,<3`); extras are united. The first
 * requirement's position and marker win; sources are joined so reports can name both.
 */
export function mergeRequirements(list: Requirement[]): Requirement[] {
  const byName = new Map<string, { req: Requirement; parsed?: ParsedRequirement; displayName?: string }>();
  for (const req of list) {
    const parsed = parseRequirement(req.spec);
    const displayName = parsed ? NAME.exec(req.spec.trim())?.[1] : undefined;
    const current = byName.get(req.name);
    if (!current) {
      byName.set(req.name, { req: { ...req }, parsed, displayName });
      continue;
    }
    const source = current.req.source === req.source ? req.source : `${current.req.source}, ${req.source}`;
    if (!parsed || !current.parsed) {
      current.req.source = source;
      continue;
    }
    const a = specificity(current.parsed);
    const b = specificity(parsed);
    const extras = [...new Set([...current.parsed.extras, ...parsed.extras])];
    let winner: ParsedRequirement;
    if (b > a) winner = { ...parsed, extras };
    else if (a > b || a >= 3) winner = { ...current.parsed, extras };
    else winner = { ...current.parsed, extras, specifiers: [...new Set([...current.parsed.specifiers, ...parsed.specifiers])] };
    const name = b > a ? displayName : current.displayName;
    current.parsed = winner;
    current.displayName = name;
    current.req = { spec: formatRequirement(winner, name), name: req.name, source };
  }
  return [...byName.values()].map((entry) => entry.req);
}
