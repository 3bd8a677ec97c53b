/**
 * Bytecode for the svc runtime a worker's build carries: a claimed warm spare's (./warm-spares.ts)
 * and an unpacked build a cold worker starts from (./local.ts). A build is read-only in the sandbox,
 * so every worker compiled the runtime's modules from source: measured, the largest part of what a
 * spare still does once told to go (issue 42), ~40-50 ms of a cold worker's CPU. The platform compiles its
 * own copy of the runtime (this package's runtime/python/svc: no app's source is compiled outside a
 * sandbox) once per interpreter, as checked-hash .pyc files (PEP 552: valid for a source of the same
 * bytes whatever its mtime; Python checks that hash again when it loads one), and links the .pyc of
 * each file of the build's svc/ whose bytes are its own copy's into that folder's __pycache__. A file
 * the app changed, or a runtime of another svc version, is compiled in the worker as before. The
 * compile also keeps the runtime as a package folder (`tree/svc/`, sources and .pyc): a warm spare
 * imports it while it waits, and `link` says whether a build's svc/ is that runtime whole.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { type Dirent, linkSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { copyFile, link, mkdir, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { SVC_PATHS } from "../../../core/package-root.ts";
import { BackgroundWork } from "../../_background-work.ts";
import { sha256Hex } from "../../_ids.ts";

/** Compiles every .py under argv[1] into argv[2]/<sha256 of its bytes>.pyc; prints each file's path and sha256, then the interpreter's cache tag. */
const COMPILE = [
  "import hashlib, os, py_compile, sys",
  "src, out = sys.argv[1], sys.argv[2]",
  "for folder, dirs, files in os.walk(src):",
  "    dirs[:] = [d for d in dirs if d != '__pycache__']",
  "    for name in files:",
  "        if name.endswith('.py'):",
  "            path = os.path.join(folder, name)",
  "            with open(path, 'rb') as f:",
  "                sha = hashlib.sha256(f.read()).hexdigest()",
  "            py_compile.compile(path, cfile=os.path.join(out, sha + '.pyc'), doraise=True, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)",
  "            print(os.path.relpath(path, src), sha)",
  "print(sys.implementation.cache_tag)",
].join("\n");

interface Compiled {
  /** `cpython-311`: the name a .pyc has in __pycache__. */
  tag: string;
  dir: string;
  /** sha256 of a source file → its .pyc. */
  bySha: Set<string>;
  /** Each runtime file (path under svc/) → its sha256. */
  files: Map<string, string>;
  /** The runtime as a package folder: `<tree>/svc/`, its sources and their .pyc (a warm spare imports it before its claim). */
  tree: string;
}

/** What linking the runtime's .pyc into a build did. */
export interface LinkedRuntime {
  /** .pyc linked. */
  linked: number;
  /** The build's svc/ is the platform's runtime, file for file and byte for byte. */
  same: boolean;
}

export class RuntimeBytecode {
  private readonly started = new Set<string>();
  private readonly ready = new Map<string, Compiled>();
  /** Compiles under way: close() waits for them (they write into the platform's state folder). */
  private readonly compiling = new BackgroundWork();
  private closed = false;

  constructor(
    private readonly dataDir: string,
    private readonly runtimeDir = SVC_PATHS.runtimeDir,
  ) {}

  /** Compiles the runtime for `python` once (in the background: `link` uses it once it is there). */
  prepare(python: string): void {
    if (this.closed || this.started.has(python)) return;
    this.started.add(python);
    // a failed compile leaves no bytecode: workers compile as they always did
    this.compiling.add(this.compile(python).then((compiled) => void this.ready.set(python, compiled)));
  }

  /** The platform stops: no compile starts any more, and this resolves once none writes into the state folder. */
  async close(): Promise<void> {
    this.closed = true;
    await this.compiling.settled();
  }

  /**
   * Links the .pyc of each file of `buildDir`/svc that is the runtime's own; answers how many and
   * whether that svc/ is the runtime's whole, or undefined while `python`'s compile is not there (not
   * done yet, or it failed).
   */
  async link(python: string, buildDir: string): Promise<LinkedRuntime | undefined> {
    const compiled = this.ready.get(python);
    if (!compiled) return undefined;
    const seen = new Map<string, string>();
    const linked = this.linkFolder(compiled, join(buildDir, "svc"), "", seen);
    const same = seen.size === compiled.files.size && [...seen].every(([path, sha]) => compiled.files.get(path) === sha);
    return { linked, same };
  }

  /** The runtime as a package folder (`<it>/svc/`) with `python`'s .pyc, once compiled. */
  tree(python: string): string | undefined {
    return this.ready.get(python)?.tree;
  }

  /**
   * Synchronous on purpose: a claimed spare waits on this, and the promise API's round trips for each of
   * the runtime's ~40 files (read, mkdir, link) took ~30 ms where the calls themselves take ~2.
   */
  private linkFolder(compiled: Compiled, dir: string, rel: string, seen: Map<string, string>): number {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return 0;
    }
    let linked = 0;
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== "__pycache__") linked += this.linkFolder(compiled, path, `${rel}${entry.name}/`, seen);
      if (!entry.isFile() || !entry.name.endsWith(".py")) continue;
      const sha = createHash("sha256").update(readFileSync(path)).digest("hex");
      seen.set(`${rel}${entry.name}`, sha);
      if (!compiled.bySha.has(sha)) continue;
      mkdirSync(join(dir, "__pycache__"), { recursive: true, mode: 0o755 });
      try {
        linkSync(join(compiled.dir, `${sha}.pyc`), join(dir, "__pycache__", `${basename(entry.name, ".py")}.${compiled.tag}.pyc`));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error; // another worker of the build linked it first
      }
      linked++;
    }
    return linked;
  }

  private async compile(python: string): Promise<Compiled> {
    const dir = join(this.dataDir, "bytecode", sha256Hex(`${python}\n${this.runtimeDir}`).slice(0, 16));
    const tmp = `${dir}.tmp-${process.pid}`;
    await rm(dir, { recursive: true, force: true });
    await mkdir(tmp, { recursive: true });
    const printed = await new Promise<string>((resolve, reject) => {
      const proc = spawn(python, ["-s", "-S", "-c", COMPILE, this.runtimeDir, tmp], { stdio: ["ignore", "pipe", "ignore"] });
      let out = "";
      proc.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
      proc.on("error", reject);
      proc.on("exit", (code) => (code === 0 && out.trim() ? resolve(out.trim()) : reject(new Error(`exit ${code}`))));
    }).catch(async (error: Error) => {
      await rm(tmp, { recursive: true, force: true });
      throw error;
    });
    const lines = printed.split("\n");
    const cacheTag = lines.pop()!.trim();
    const files = new Map(lines.map((line) => [line.slice(0, line.lastIndexOf(" ")), line.slice(line.lastIndexOf(" ") + 1).trim()] as const));
    await this.makeTree(tmp, cacheTag, files);
    await rename(tmp, dir);
    return { tag: cacheTag, dir, bySha: new Set(files.values()), files, tree: join(dir, "tree") };
  }

  /** `<dir>/tree/svc/`: the runtime's sources (copies: the package may be on another file system) and each one's .pyc linked into __pycache__. */
  private async makeTree(dir: string, tag: string, files: Map<string, string>): Promise<void> {
    for (const [path, sha] of files) {
      const source = join(dir, "tree", "svc", path);
      await mkdir(join(dirname(source), "__pycache__"), { recursive: true });
      await copyFile(join(this.runtimeDir, path), source);
      await link(join(dir, `${sha}.pyc`), join(dirname(source), "__pycache__", `${basename(path, ".py")}.${tag}.pyc`));
    }
  }
}
