/**
 * PythonParser: a long-lived `python3 helper --serve` process (helper/: the interpreter's own `ast`
 * module and pip's `packaging`), one JSON request per line. The results are cached per file content in a module-level
 * map, so an unchanged file is never parsed twice within one process (the dev server re-parses only
 * what changed). The process is unref'd while idle: it never keeps Node alive on its own.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createHash } from "node:crypto";
import { createInterface } from "node:readline";
import { errors } from "../../core/errors.ts";
import type { FunctionParam, HttpMethod, PythonImport, PythonTypeDef, StaticValue } from "../../core/types.ts";
import { HELPER_DIR } from "./helper-files.ts";
import { pythonInterpreter } from "./interpreter.ts";

export interface RawDeclaration {
  line: number;
  variable?: string;
  args: Record<string, StaticValue>;
}

export interface RawFunction {
  name: string;
  line: number;
  isAsync: boolean;
  isGenerator: boolean;
  declaration: RawDeclaration;
  route?: { method: HttpMethod; path: string };
  params: FunctionParam[];
  types?: Record<string, PythonTypeDef>;
  returns?: string;
}

export interface RawProblem {
  code: "PYTHON_SYNTAX" | "NON_STATIC_ARGUMENT" | "ENDPOINT_ARGUMENT_INVALID";
  line: number;
  message: string;
  argument?: string;
  source?: string;
}

/** What the helper found in one file: its functions, Endpoint objects and imports, or the first problem. */
export type FileAnalysis =
  | { path: string; functions: RawFunction[]; endpoints: RawDeclaration[]; imports: PythonImport[]; error?: undefined }
  | { path: string; error: RawProblem };

export interface ParseInput {
  /** POSIX path relative to the project root (used in errors). */
  path: string;
  /** The file's bytes (the helper honours BOMs and coding cookies). */
  source: Buffer;
}

/** interpreter + content hash → analysis (without its path). Bounded: the oldest entries go first. */
const cache = new Map<string, Omit<FileAnalysis, "path">>();
const CACHE_LIMIT = 20_000;

export const contentHash = (source: Buffer): string => createHash("sha256").update(source).digest("hex");

/** The interpreter's standard library: its version and top-level module names. */
export interface StdlibModules {
  version: string;
  modules: string[];
}

/** One requirement line as pip's vendored `packaging` reads it (helper/requirements.py). */
export interface ParsedRequirement {
  /** PEP 503 name: `Foo_Bar` → `foo-bar`. */
  name: string;
  /** The name as written (kept when requirements are merged). */
  written: string;
  extras: string[];
  /** Version specifiers (`>=1.2`, `==2.0`), in the order written. */
  specifiers: string[];
  marker?: string;
  /** `name @ url`, or a bare URL or path named from its file name or `#egg=`. */
  url?: string;
}

/**
 * Where a file calls the hosted SDK's `runpod.serverless.start({...})` when run (helper/stock_worker.py):
 * its line and the config dict's keys written literally (a function's name for `handler` and
 * `concurrency_modifier`, with the handler's kind), or null when it does not.
 */
export interface StockWorkerStart {
  line: number;
  handler?: string;
  handlerLine?: number;
  isAsync?: boolean;
  isGenerator?: boolean;
  concurrency_modifier?: string;
  return_aggregate_stream?: boolean;
  refresh_worker?: boolean;
}

export type StockWorkerAnalysis = { path: string; start: StockWorkerStart | null; error?: undefined } | { path: string; error: RawProblem };

interface Response {
  results: FileAnalysis[];
  stockWorkers?: StockWorkerAnalysis[];
  requirements?: Array<ParsedRequirement | null>;
  stdlib?: StdlibModules;
  /** The interpreter the helper runs in (sys.executable): the real one behind a shim. */
  executable?: string;
}

interface Pending {
  resolve(value: Response): void;
  reject(error: unknown): void;
}

export class PythonParser {
  /** The configured interpreter: the parser's identity (cache keys, errors). */
  readonly python: string;
  /** The interpreter the running helper reported (sys.executable), once it answered. */
  executable?: string;
  /** Files actually sent to Python (cache misses), for diagnostics and tests. */
  parsedFiles = 0;
  /** What the next helper start runs: `python`, or the real interpreter behind it (startWith). */
  private command: string;
  private child?: ChildProcessWithoutNullStreams;
  private stdlibModules?: Promise<StdlibModules>;
  private readonly pending: Pending[] = [];
  private stderr = "";

  constructor(options: { python?: string } = {}) {
    this.python = options.python ?? pythonInterpreter();
    this.command = this.python;
  }

  /** Starts the next helper with `command`, the same interpreter as `python` without its shim (real-python.ts). */
  startWith(command: string): void {
    this.command = command;
  }

  /** Analyses the files, answering in input order; cached files are not sent to Python. */
  async parse(files: readonly ParseInput[]): Promise<FileAnalysis[]> {
    // Keyed by interpreter too: another Python version may parse the same bytes differently.
    const hashes = files.map((file) => `${this.python}\0${contentHash(file.source)}`);
    const missing = new Map<string, ParseInput>();
    files.forEach((file, index) => {
      const hash = hashes[index]!;
      if (!cache.has(hash) && !missing.has(hash)) missing.set(hash, file);
    });
    if (missing.size > 0) {
      const request = { files: [...missing.values()].map((file) => ({ path: file.path, source: file.source.toString("base64") })) };
      const { results } = await this.request(request);
      this.parsedFiles += missing.size;
      [...missing.keys()].forEach((hash, index) => {
        const { path: _path, ...rest } = results[index]!;
        remember(hash, rest);
      });
    }
    return files.map((file, index) => ({ ...cache.get(hashes[index]!)!, path: file.path }) as FileAnalysis);
  }

  /** The interpreter's standard library (asked once per parser). */
  stdlib(): Promise<StdlibModules> {
    this.stdlibModules ??= this.request({ stdlib: true }).then((response) => {
      if (!response.stdlib) throw new Error("the Python discovery helper did not list the standard library");
      return response.stdlib;
    });
    return this.stdlibModules;
  }

  /** Requirement lines read by pip's own `packaging` in the helper, in order; undefined for a line that names no project. */
  async requirements(lines: readonly string[]): Promise<Array<ParsedRequirement | undefined>> {
    if (lines.length === 0) return [];
    const response = await this.request({ requirements: lines });
    return (response.requirements ?? []).map((parsed) => parsed ?? undefined);
  }

  /** Where each file calls the hosted SDK's start (not cached: a few small files per build). */
  async stockWorkers(files: readonly ParseInput[]): Promise<StockWorkerAnalysis[]> {
    if (files.length === 0) return [];
    const response = await this.request({ stockWorkers: files.map((file) => ({ path: file.path, source: file.source.toString("base64") })) });
    return response.stockWorkers ?? [];
  }

  /** Stops the helper process. A later parse() starts a new one. */
  close(): void {
    const child = this.child;
    this.child = undefined;
    if (!child) return;
    child.stdin.end();
    child.kill();
    this.failPending(new Error("the Python parser was closed"));
  }

  private request(body: object): Promise<Response> {
    const child = this.start();
    return new Promise<Response>((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.setRef(true);
      child.stdin.write(`${JSON.stringify(body)}\n`);
    });
  }

  private start(): ChildProcessWithoutNullStreams {
    if (this.child) return this.child;
    const child = spawn(this.command, ["-u", HELPER_DIR, "--serve"], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", PYTHONIOENCODING: "utf-8" },
    });
    this.child = child;
    this.stderr = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-4000);
    });
    child.stdin.on("error", () => {
      /* reported through 'exit' / 'error' */
    });
    createInterface({ input: child.stdout }).on("line", (line) => this.onLine(line));
    child.on("error", (error: NodeJS.ErrnoException) => {
      if (this.child === child) this.child = undefined;
      this.failPending(error.code === "ENOENT" ? errors.PYTHON_NOT_FOUND(this.python) : error);
    });
    child.on("exit", (code, signal) => {
      if (this.child === child) this.child = undefined;
      this.failPending(new Error(`the Python discovery helper (${this.python}) exited (${signal ?? code}): ${this.stderr.trim() || "no output"}`));
    });
    return child;
  }

  private onLine(line: string): void {
    const waiter = this.pending.shift();
    if (this.pending.length === 0) this.setRef(false);
    if (!waiter) return;
    try {
      const response = JSON.parse(line) as Partial<Response> & { fatal?: string };
      if (response.fatal || !response.results) throw new Error(`the Python discovery helper failed: ${response.fatal ?? line}`);
      this.executable = response.executable ?? this.executable;
      waiter.resolve(response as Response);
    } catch (error) {
      waiter.reject(error);
    }
  }

  private failPending(error: unknown): void {
    for (const waiter of this.pending.splice(0)) waiter.reject(error);
  }

  /** Holds the Node process open only while a request is in flight. */
  private setRef(on: boolean): void {
    const child = this.child;
    if (!child) return;
    for (const handle of [child, child.stdin, child.stdout, child.stderr] as Array<{ ref?(): void; unref?(): void }>) {
      if (on) handle.ref?.();
      else handle.unref?.();
    }
  }
}

function remember(hash: string, analysis: Omit<FileAnalysis, "path">): void {
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  cache.set(hash, analysis);
}

/** One shared parser per interpreter, kept alive (idle, unref'd) for the life of the process. */
const shared = new Map<string, PythonParser>();
export function sharedParser(python = pythonInterpreter()): PythonParser {
  let parser = shared.get(python);
  if (!parser) shared.set(python, (parser = new PythonParser({ python })));
  return parser;
}
