/**
 * svc:discover-python — finds the app's files (ctx.sourceFiles, folders unchanged since the last run
 * not read again: _listing-cache.ts) and the `@Endpoint(...)` functions
 * in its Python files, with Python's own parser in the Python helper's process (plugins/_python/;
 * never regexes, never importing user code).
 */
import { join } from "node:path";
import { errors, type SvcError } from "../../core/errors.ts";
import type { BuildContext, DiscoveredFunction, SourceLocation, SvcPlugin } from "../../core/types.ts";
import { modulePath, parseWithCache, sharedParser, type FileAnalysis, type PythonParser, type RawProblem } from "../_python/index.ts";
import { compareCodeUnits, IGNORE_FILES } from "./_files.ts";
import { LISTING_CACHE_FILE, listSourceFilesWithCache } from "./_listing-cache.ts";

export { LISTING_CACHE_FILE, listSourceFilesWithCache } from "./_listing-cache.ts";
export { BUILTIN_IGNORES, IGNORE_FILES, createIgnore, isSourceFile, listSourceFiles } from "./_files.ts";

export const PLUGIN_NAME = "svc:discover-python";

export interface DiscoverPythonOptions {
  /**
   * The parser to use. Default: one shared helper per interpreter (`SVC_PYTHON`, else `python3`),
   * kept alive idle for the life of the process so the dev server re-parses only changed files.
   */
  parser?: PythonParser;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function discoverPython(options: DiscoverPythonOptions = {}): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.discover.tapPromise(PLUGIN_NAME, async (functions, ctx) => {
        const listing = await listSourceFilesWithCache(ctx.root, ctx.config.ignore, join(ctx.outDir, LISTING_CACHE_FILE));
        ctx.sourceFiles = listing.files;
        for (const folder of listing.folders) ctx.dependencies.folders.add(join(ctx.root, folder));
        for (const name of IGNORE_FILES) ctx.dependencies.files.add(join(ctx.root, name));
        const found = await discoverFunctions(ctx, options.parser ?? sharedParser());
        const all = [...functions, ...found];
        if (all.length === 0) throw errors.NO_ENDPOINTS();
        return all;
      });
    },
  };
}

/** Parses the Python files among ctx.sourceFiles; answers their decorated functions, sorted by file and line. */
export async function discoverFunctions(ctx: BuildContext, parser: PythonParser): Promise<DiscoveredFunction[]> {
  const pyFiles = ctx.sourceFiles.filter((file) => file.endsWith(".py"));
  const analyses = await parseWithCache(ctx, parser, pyFiles);
  const functions: DiscoveredFunction[] = [];
  ctx.pythonImports = {};
  for (const analysis of [...analyses].sort((a, b) => compareCodeUnits(a.path, b.path))) {
    functions.push(...toFunctions(analysis));
    if (!analysis.error) ctx.pythonImports[analysis.path] = analysis.imports;
  }
  for (const analysis of analyses) {
    if (analysis.error) continue;
    for (const declaration of analysis.endpoints) {
      if (!functions.some((fn) => fn.file === analysis.path && fn.declaration.line === declaration.line)) {
        ctx.logger.warn(
          `${analysis.path}:${declaration.line}: Endpoint object "${declaration.variable}" has no routes (@${declaration.variable}.get/post/...) and decorates no function; it is not deployed.`,
        );
      }
    }
  }
  return functions.sort((a, b) => compareCodeUnits(a.file, b.file) || a.line - b.line);
}

function toFunctions(analysis: FileAnalysis): DiscoveredFunction[] {
  const file = analysis.path;
  if (analysis.error) throw toError(file, analysis.error);
  if (analysis.functions.length === 0) return [];
  const module = modulePath(file);
  if (!module.split(".").every((part) => IDENTIFIER.test(part))) {
    const first = analysis.functions[0]!;
    throw errors.ENDPOINT_ARGUMENT_INVALID(
      { file, line: first.declaration.line },
      `the module path "${module}" of this file is not importable; rename its folders and file to Python identifiers (letters, digits, '_').`,
    );
  }
  return analysis.functions.map((fn) => ({
    name: fn.name,
    file,
    line: fn.line,
    module,
    isAsync: fn.isAsync,
    isGenerator: fn.isGenerator,
    declaration: { file, line: fn.declaration.line, ...(fn.declaration.variable ? { variable: fn.declaration.variable } : {}), args: fn.declaration.args },
    ...(fn.route ? { route: { method: fn.route.method, path: fn.route.path } } : {}),
    params: fn.params,
    ...(fn.types ? { types: fn.types } : {}),
    ...(fn.returns ? { returns: fn.returns } : {}),
  }));
}

function toError(file: string, problem: RawProblem): SvcError {
  const loc: SourceLocation = { file, line: problem.line };
  switch (problem.code) {
    case "PYTHON_SYNTAX":
      return errors.PYTHON_SYNTAX(loc, problem.message);
    case "NON_STATIC_ARGUMENT":
      return errors.NON_STATIC_ARGUMENT(loc, problem.argument ?? "?", problem.source ?? "");
    default:
      return errors.ENDPOINT_ARGUMENT_INVALID(loc, problem.message);
  }
}
