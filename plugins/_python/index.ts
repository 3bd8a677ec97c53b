/**
 * The Python helper's room, shared by the plugins that ask Python (discovery, requirements,
 * check-imports) and the dev server: the helper process's client (parser.ts) over the stdlib package
 * in helper/, the caches kept on its answers, and the interpreter it runs in.
 */
export { pythonInterpreter } from "./interpreter.ts";
export {
  PythonParser,
  sharedParser,
  type FileAnalysis,
  type ParsedRequirement,
  type RawProblem,
  type StdlibModules,
  type StockWorkerAnalysis,
  type StockWorkerStart,
} from "./parser.ts";
export { ANALYSIS_CACHE_FILE, parseWithCache, stdlibWithCache } from "./analysis-cache.ts";
export { HELPER_DIR, helperVersion } from "./helper-files.ts";
export { PYTHON_CACHE_FILE, rememberPython, startablePython } from "./real-python.ts";
export { modulePath } from "./module-path.ts";
