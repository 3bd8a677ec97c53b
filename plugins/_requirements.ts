/**
 * requirements.txt reading and requirement merging (private to the dependency plugins). Each
 * requirement is read by pip's own `packaging` (PEP 508: name, extras, specifiers, marker, URL)
 * through the discovery helper; the file's pip options and includes are read here. The line itself
 * is handed to pip unchanged unless two lines of one project are merged.
 */
import { readFile } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import type { BuildContext, Requirement } from "../core/types.ts";
import { fileIndexOf } from "./_file-index.ts";
import { readCacheJson, writeFileAtomically } from "./_fs.ts";
import { helperVersion, sharedParser, type ParsedRequirement, type PythonParser } from "./_python/index.ts";

/** PEP 503 normalisation: `Foo_Bar.baz` → `foo-bar-baz`. */
export function normalizeName(name: string): string {
  return name.replace(/[-_.]+/g, "-").toLowerCase();
}

/**
 * Requirement lines read by pip's own `packaging` (vendored in every pip) in the discovery helper
 * svc already runs (plugins/_python/helper/requirements.py), in order; undefined for a line that names
 * no project.
 */
export async function parseRequirements(lines: readonly string[], parser: PythonParser = sharedParser()): Promise<Array<ParsedRequirement | undefined>> {
  const key = (line: string) => `${parser.python}\0${line}`;
  const missing = [...new Set(lines.filter((line) => !known.has(key(line))))];
  if (missing.length > 0) {
    const parsed = await parser.requirements(missing);
    for (const [index, line] of missing.entries()) known.set(key(line), parsed[index] ?? null);
  }
  return lines.map((line) => known.get(key(line)) ?? undefined);
}

/** Lines read so far, by interpreter and line (null: names no project): the dev server asks Python once per new line. */
const known = new Map<string, ParsedRequirement | null>();

export const REQUIREMENTS_CACHE_FILE = "cache/requirements.json";

/**
 * Runs `work` with the lines earlier builds of this app read (`.svc/cache/requirements.json`, kept
 * per interpreter and helper version) known, and records the lines it read: a build whose
 * requirements did not change starts no Python process for them, as discovery's cache does. The
 * helper's hash comes from the run's file index, which discovery has already asked for it.
 */
export async function withRequirementsCache<T>(ctx: BuildContext, work: () => Promise<T>, parser: PythonParser = sharedParser()): Promise<T> {
  const file = join(ctx.outDir, REQUIREMENTS_CACHE_FILE);
  const version = `${parser.python}\0${await helperVersion(await fileIndexOf(ctx))}`;
  const cached = readCacheJson<{ version: string; lines: Record<string, ParsedRequirement | null> }>(file);
  if (cached?.version === version && cached.lines) for (const [line, parsed] of Object.entries(cached.lines)) known.set(`${parser.python}\0${line}`, parsed);
  const before = known.size;
  const result = await work();
  if (known.size !== before || cached?.version !== version) {
    const prefix = `${parser.python}\0`;
    const lines = Object.fromEntries([...known].filter(([key]) => key.startsWith(prefix)).map(([key, parsed]) => [key.slice(prefix.length), parsed]));
    await writeFileAtomically(file, JSON.stringify({ version, lines }));
  }
  return result;
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
export const GLOBAL_OPTIONS_WITH_VALUE: ReadonlySet<string> = new Set([
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
export const GLOBAL_FLAGS: ReadonlySet<string> = new Set(["--pre", "--no-index", "--prefer-binary"]);

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
  /** This file's requirements, named once every line is read (one request to the helper). */
  const own: Array<{ spec: string; source: string; editable: boolean }> = [];
  for (const { line, number } of logicalLines(text)) {
    const tokens = line.split(/\s+/);
    const first = tokens[0] ?? "";
    if (first.startsWith("-")) {
      const [flag = "", inlineValue] = first.includes("=") ? [first.slice(0, first.indexOf("=")), first.slice(first.indexOf("=") + 1)] : [first, undefined];
      const value = inlineValue ?? tokens.slice(1).join(" ");
      if (flag === "-r" || flag === "--requirement") {
        const nested = await readRequirementsFile(isAbsolute(value) ? value : join(dirname(absolute), value), root, seen);
        out.requirements.push(...(await namedRequirements(own.splice(0))), ...nested.requirements);
        out.pipOptions.push(...nested.pipOptions);
      } else if (flag === "-e" || flag === "--editable") {
        own.push({ spec: value, source: `${source}:${number}`, editable: true });
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
    own.push({ spec: line.replace(/\s+--hash[=\s]\S+/g, "").trim(), source: `${source}:${number}`, editable: false });
  }
  out.requirements.push(...(await namedRequirements(own)));
  return out;
}

/** Requirements with their PEP 503 names (an unnamed line keeps its text, normalised unless editable). */
export async function namedRequirements(lines: ReadonlyArray<{ spec: string; source: string; editable?: boolean }>): Promise<Requirement[]> {
  const parsed = await parseRequirements(lines.map((line) => line.spec));
  return lines.map(({ spec, source, editable }, index) => ({ spec, name: parsed[index]?.name ?? (editable ? spec : normalizeName(spec)), source }));
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
export async function mergeRequirements(list: Requirement[]): Promise<Requirement[]> {
  const byName = new Map<string, { req: Requirement; parsed?: ParsedRequirement; displayName?: string }>();
  const parsedList = await parseRequirements(list.map((req) => req.spec));
  for (const [index, req] of list.entries()) {
    const parsed = parsedList[index];
    const displayName = parsed?.written;
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

/** The pip options svc:resolve-deps found (empty when it did not run). */
export function pipOptionsOf(ctx: BuildContext): string[] {
  return ctx.meta.get("svc:resolve-deps")?.pipOptions ?? [];
}
