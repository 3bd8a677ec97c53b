/**
 * Discovery results kept between runs: `.svc/cache/discover.json` maps a Python file's content hash
 * (from the run's file index, so an unchanged file is not even read) to what the parser found in
 * it: on a rebuild with nothing changed, discovery starts no Python process. The cache belongs to one parser
 * version: its key holds the interpreter and the hashes of the helper's files and the _schema.py it reads, so a changed helper or another
 * interpreter starts a fresh cache. The interpreter's stdlib list is kept beside the analyses
 * (stdlibWithCache), for the same reason.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { BuildContext } from "../../core/types.ts";
import { fileIndexOf } from "../_file-index.ts";
import { readCacheJson, writeFileAtomically } from "../_fs.ts";
import { mapLimit } from "../../core/map-limit.ts";
import { ENDPOINT_SCHEMA_PY, helperVersion } from "./helper-files.ts";
import { contentHash, type FileAnalysis, type PythonParser, type StdlibModules } from "./parser.ts";
import { rememberPython, startablePython } from "./real-python.ts";

export const ANALYSIS_CACHE_FILE = "cache/discover.json";
/** Bump when the shape of a cached analysis changes without the helper changing. */
const CACHE_VERSION = 1;
const READ_CONCURRENCY = 16;

type Analysis = Omit<FileAnalysis, "path">;
interface CacheFile {
  key: string;
  entries: Record<string, Analysis>;
  stdlib?: StdlibModules;
}

function readCache(file: string, key: string): CacheFile {
  const data = readCacheJson<CacheFile>(file);
  return data?.key === key && data.entries ? (data as CacheFile) : { key, entries: {} };
}

async function cacheKey(ctx: BuildContext, parser: PythonParser): Promise<string> {
  const index = await fileIndexOf(ctx);
  const [helper, schema] = await Promise.all([helperVersion(index), index.digest(ENDPOINT_SCHEMA_PY)]);
  return `v${CACHE_VERSION}\0${parser.python}\0${helper}\0${schema.sha256}`;
}

/** Runs `ask` (a request to the helper) with the real interpreter behind a shim, learnt on the first run (docs/manifest.md). */
async function withRealPython<T>(ctx: BuildContext, parser: PythonParser, ask: () => Promise<T>): Promise<T> {
  parser.startWith(await startablePython(ctx.outDir, parser.python));
  const answer = await ask();
  if (parser.executable) await rememberPython(ctx.outDir, parser.python, parser.executable);
  return answer;
}

/** parser.stdlib(), asked of Python once per interpreter and helper version, then read from the cache. */
export async function stdlibWithCache(ctx: BuildContext, parser: PythonParser): Promise<StdlibModules> {
  const file = join(ctx.outDir, ANALYSIS_CACHE_FILE);
  const data = readCache(file, await cacheKey(ctx, parser));
  if (data.stdlib) return data.stdlib;
  const stdlib = await withRealPython(ctx, parser, () => parser.stdlib());
  await writeFileAtomically(file, JSON.stringify({ ...readCache(file, data.key), stdlib } satisfies CacheFile));
  return stdlib;
}

/** The parser's analyses of `pyFiles` (POSIX, relative to ctx.root), in input order; only files not seen before are read and parsed. */
export async function parseWithCache(ctx: BuildContext, parser: PythonParser, pyFiles: readonly string[]): Promise<FileAnalysis[]> {
  const index = await fileIndexOf(ctx);
  const file = join(ctx.outDir, ANALYSIS_CACHE_FILE);
  const data = readCache(file, await cacheKey(ctx, parser));
  const cached = new Map(Object.entries(data.entries));
  // a file the index must read anyway comes back with its bytes: on a cold build each is read once
  const read = await mapLimit(pyFiles, READ_CONCURRENCY, (path) => index.digest(join(ctx.root, path), { keepBytes: true }));
  const digests = read.map((digest) => digest.sha256);
  const missing = new Set(pyFiles.filter((_path, i) => !cached.has(digests[i]!)));
  pyFiles.forEach((path, i) => {
    if (!missing.has(path)) delete read[i]!.bytes; // only the files to parse keep their bytes
  });
  /** What this run used, by content hash: written back, so entries of files gone or changed drop out. */
  const keep = new Map<string, Analysis>();
  const fresh = new Map<string, Analysis>();
  if (missing.size > 0) {
    const inputs = await mapLimit(
      [...pyFiles.entries()].filter(([, path]) => missing.has(path)),
      READ_CONCURRENCY,
      async ([i, path]) => ({
        path,
        source: read[i]!.bytes ?? (await readFile(join(ctx.root, path))),
      }),
    );
    const analyses = await withRealPython(ctx, parser, () => parser.parse(inputs));
    inputs.forEach((input, i) => {
      const { path: _path, ...analysis } = analyses[i]!;
      fresh.set(input.path, analysis);
      // keyed by the bytes actually parsed (the file may have changed since it was indexed)
      keep.set(contentHash(input.source), analysis);
    });
  }
  const results = pyFiles.map((path, i) => {
    const analysis = fresh.get(path) ?? cached.get(digests[i]!)!;
    if (!missing.has(path)) keep.set(digests[i]!, analysis);
    return { ...analysis, path } as FileAnalysis;
  });
  if (missing.size > 0 || keep.size !== cached.size)
    await writeFileAtomically(file, JSON.stringify({ ...data, entries: Object.fromEntries(keep) } satisfies CacheFile));
  await index.save();
  return results;
}
