/**
 * One-way layers (DESIGN.md, docs/architecture.md), over every source folder — static, re-export,
 * type-only and dynamic imports alike, found by TypeScript's own import scanner:
 * - each folder imports only the folders below it (LAYERS);
 * - an import into another folder reaches that folder's public modules only (PUBLIC): never a
 *   private `_*.ts` module, plugins/ through index files, platform/ through index.ts or its light
 *   entry local.ts, dev/ through index.ts;
 * - no two files import each other, directly or round a loop (type-only imports count: a loop of
 *   types is a loop a reader must hold in their head as well);
 * - only the worker backends (platform/workers/backends/) spawn a worker's process: no other file
 *   calls the launch's spawner, and the platform's other files that start processes at all are
 *   the few named below, each with what it starts.
 */
import { readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(new URL("../..", import.meta.url).pathname);

/** What each top-level folder may import besides itself. */
const LAYERS: Record<string, readonly string[]> = {
  core: [],
  plugins: ["core"],
  platform: ["core", "plugins"],
  dev: ["core", "plugins", "platform"],
  testing: ["core", "plugins", "platform"],
  cli: ["core", "plugins", "platform", "dev"],
};
const FOLDERS = Object.keys(LAYERS);
/** The folders whose rooms are held to one-way imports among themselves (docs/architecture.md, "Layers"). */
const ROOM_FOLDERS = ["plugins", "platform", "dev"];

/** The modules of each folder that other folders may import (repository-relative). */
const PUBLIC: Record<string, RegExp> = {
  core: /^core\/(?!(.*\/)?_)/,
  plugins: /^plugins\/([\w-]+\/)?index\.ts$/,
  platform: /^platform\/(index|local)\.ts$/,
  dev: /^dev\/index\.ts$/,
  testing: /^testing\/index\.ts$/,
  cli: /^cli\/index\.ts$/,
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(m|c)?ts$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Repository-relative targets of every relative import of `file` (its source is `text`). */
function importsOf(file: string, text = readFileSync(file, "utf8")): string[] {
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.map((imported) => imported.fileName)
    .filter((specifier) => specifier.startsWith("."))
    .map((specifier) => relative(ROOT, resolve(dirname(file), specifier)));
}

const folderOf = (path: string) => path.split(/[\\/]/)[0]!;

/** `from -> to` for each import of `file` that breaks LAYERS or PUBLIC. */
function violations(file: string, text?: string): string[] {
  const from = relative(ROOT, file);
  const own = folderOf(from);
  return importsOf(file, text)
    .filter((to) => FOLDERS.includes(folderOf(to)) && folderOf(to) !== own)
    .filter((to) => !LAYERS[own]!.includes(folderOf(to)) || !PUBLIC[folderOf(to)]!.test(to))
    .map((to) => `${from} -> ${to}`);
}

/** The functions that start a worker's process (platform/workers/backends/spawn.ts, and the bwrap under it). */
const WORKER_SPAWNERS = new Set(["spawnLaunch", "spawnBwrap"]);
/** Where a worker's process may be spawned. */
const BACKENDS = /^platform\/workers\/backends\//;
/** The platform's other files that start processes, and what: none of them a worker. */
const OTHER_PROCESSES: Record<string, string> = {
  "platform/ensure.ts": "a detached platform",
  "platform/api/connection-caps.ts": "prlimit, raising the platform's open-files limit",
  "platform/volumes/volume-disk.ts": "mkfs.ext4, losetup and mount for a volume's disk image",
  "platform/workers/gpus.ts": "nvidia-smi and ldconfig",
  "platform/workers/interpreter.ts": "a Python probe (does torch see CUDA?)",
  "platform/workers/_image-probe.ts": "the interpreter's package probe",
  "platform/workers/sandbox.ts": "bwrap: spawnBwrap itself, and the probe that it runs here",
  "platform/workers/sandbox-egress.ts": "slirp4netns for a worker's network namespace",
  "platform/workers/command-runner.ts": "the helper that runs ip and slirp4netns --version off the platform's event loop",
};
const CHILD_PROCESS = new Set(["node:child_process", "child_process"]);

/** The values `source` imports from node:child_process, as `name from module`. */
function childProcessValues(source: ts.SourceFile): string[] {
  return source.statements.flatMap((node) => {
    if (!ts.isImportDeclaration(node) || !ts.isStringLiteral(node.moduleSpecifier) || !CHILD_PROCESS.has(node.moduleSpecifier.text)) return [];
    const clause = node.importClause;
    const values = clause && !clause.isTypeOnly ? valueImports(clause) : [];
    return values.length > 0 ? [`${values.join(", ")} from ${node.moduleSpecifier.text}`] : [];
  });
}

/** `file: what` for each way `file` (repository-relative, its source `text`) starts a worker's process outside the backends. */
function workerSpawns(file: string, text: string): string[] {
  if (!file.startsWith("platform/") || BACKENDS.test(file)) return [];
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found = file in OTHER_PROCESSES ? [] : childProcessValues(source).map((imported) => `${file}: imports ${imported}`);
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node)) {
      const callee = ts.isPropertyAccessExpression(node.expression) ? node.expression.name : node.expression;
      if (ts.isIdentifier(callee) && WORKER_SPAWNERS.has(callee.text) && file !== "platform/workers/sandbox.ts") found.push(`${file}: calls ${callee.text}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The values `text` imports from the platform client's index (undici, graphql): a build never loads them. */
function clientValues(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  return source.statements.flatMap((node) =>
    ts.isImportDeclaration(node) &&
    ts.isStringLiteral(node.moduleSpecifier) &&
    node.moduleSpecifier.text.endsWith("core/client/index.ts") &&
    node.importClause &&
    !node.importClause.isTypeOnly
      ? valueImports(node.importClause).map((name) => `${file}: ${name}`)
      : [],
  );
}

/** The names an import clause brings in as values (not `type` ones). */
function valueImports(clause: ts.ImportClause): string[] {
  const names = clause.name ? [clause.name.text] : [];
  const bindings = clause.namedBindings;
  if (bindings && ts.isNamespaceImport(bindings)) names.push(`* as ${bindings.name.text}`);
  if (bindings && ts.isNamedImports(bindings)) names.push(...bindings.elements.filter((e) => !e.isTypeOnly).map((e) => e.name.text));
  return names;
}

/** The import graph of every source folder: file -> files it imports. */
function importGraph(): Map<string, string[]> {
  const files = FOLDERS.flatMap((folder) => sourceFiles(join(ROOT, folder)));
  const known = new Set(files.map((file) => relative(ROOT, file)));
  return new Map(files.map((file) => [relative(ROOT, file), importsOf(file).filter((to) => known.has(to))]));
}

/** The strongly connected components of more than one file (or a file importing itself): Tarjan's algorithm. */
function cycles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, counter);
    low.set(file, counter++);
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (stack.includes(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || graph.get(file)!.includes(file)) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

describe("layers", () => {
  it("the check sees static, re-export, type-only and dynamic imports, and private or non-index targets", () => {
    const text = [
      'import "../../platform/server.ts";',
      'export * from "../../cli/b.ts";',
      'import type { X } from "../../dev/index.ts";',
      'const x = await import("../../plugins/provision.ts");',
      'import "../../plugins/index.ts";',
      'import "../_private.ts";',
      'import "./fine.ts";',
    ].join("\n");
    expect(violations(join(ROOT, "core", "client", "probe.ts"), text)).toEqual([
      "core/client/probe.ts -> platform/server.ts",
      "core/client/probe.ts -> cli/b.ts",
      "core/client/probe.ts -> dev/index.ts",
      "core/client/probe.ts -> plugins/provision.ts",
      "core/client/probe.ts -> plugins/index.ts",
    ]);
    expect(violations(join(ROOT, "dev", "routes", "probe.ts"), text)).toEqual([
      "dev/routes/probe.ts -> platform/server.ts",
      "dev/routes/probe.ts -> cli/b.ts",
      "dev/routes/probe.ts -> plugins/provision.ts",
    ]);
    expect(violations(join(ROOT, "cli", "probe.ts"), 'import "../core/_config-bundle.ts";\nimport "../core/build.ts";\n')).toEqual([
      "cli/probe.ts -> core/_config-bundle.ts",
    ]);
  });

  for (const folder of FOLDERS) {
    it(`${folder}/ imports ${LAYERS[folder]!.length ? `only ${LAYERS[folder]!.join(", ")}, through their public modules` : "no other folder"}`, () => {
      const files = sourceFiles(join(ROOT, folder));
      expect(files.length).toBeGreaterThan(0);
      expect(files.flatMap((file) => violations(file))).toEqual([]);
    });
  }

  it("the cycle check finds a loop of two and of three files", () => {
    const graph = new Map([
      ["a", ["b"]],
      ["b", ["a", "c"]],
      ["c", ["d"]],
      ["d", ["e"]],
      ["e", ["c"]],
      ["f", ["a"]],
    ]);
    expect(cycles(graph)).toEqual([
      ["c", "d", "e"],
      ["a", "b"],
    ]);
  });

  it("no source files import each other, type-only imports included", () => {
    const graph = importGraph();
    expect(graph.size).toBeGreaterThan(100);
    expect(cycles(graph)).toEqual([]);
  });

  // Inside a folder too: its rooms (the files and sub-folders right under it) import one way, and no
  // room reaches into another room's private `_*.ts` (a folder's own top-level `_*.ts` serves all its rooms).
  for (const folder of ROOM_FOLDERS) {
    it(`${folder}/'s rooms import one way, and none reaches another room's private modules`, () => {
      const roomOf = (path: string) => path.split("/").slice(0, 2).join("/");
      const rooms = new Map<string, Set<string>>();
      const privateReaches: string[] = [];
      for (const [from, targets] of importGraph()) {
        if (folderOf(from) !== folder) continue;
        for (const to of targets.filter((t) => folderOf(t) === folder && roomOf(t) !== roomOf(from))) {
          for (const room of [roomOf(from), roomOf(to)]) if (!rooms.has(room)) rooms.set(room, new Set());
          rooms.get(roomOf(from))!.add(roomOf(to));
          if (to.split("/").length > 2 && basename(to).startsWith("_")) privateReaches.push(`${from} -> ${to}`);
        }
      }
      expect(cycles(new Map([...rooms].map(([room, to]) => [room, [...to]])))).toEqual([]);
      expect(privateReaches).toEqual([]);
    });
  }

  it("the worker-spawn check sees a spawn and a launch's spawner outside the backends, and lets the backends and type imports be", () => {
    const supervisor = [
      'import type { ChildProcess } from "node:child_process";',
      'import { spawn } from "node:child_process";',
      'import { spawnLaunch } from "./backends/spawn.ts";',
      "const a = spawnLaunch(launch);",
      'const b = spawn("python3", ["-s", handler]);',
    ].join("\n");
    expect(workerSpawns("platform/workers/supervisor.ts", supervisor)).toEqual([
      "platform/workers/supervisor.ts: imports spawn from node:child_process",
      "platform/workers/supervisor.ts: calls spawnLaunch",
    ]);
    expect(workerSpawns("platform/workers/shell.ts", 'import * as cp from "node:child_process";\nsandbox.spawnBwrap(args, {});')).toEqual([
      "platform/workers/shell.ts: imports * as cp from node:child_process",
      "platform/workers/shell.ts: calls spawnBwrap",
    ]);
    expect(workerSpawns("platform/workers/worker-logs.ts", 'import type { ChildProcess } from "node:child_process";')).toEqual([]);
    expect(workerSpawns("platform/workers/backends/local.ts", supervisor)).toEqual([]);
  });

  it("only the worker backends (platform/workers/backends/) spawn a worker's process", () => {
    const files = sourceFiles(join(ROOT, "platform")).map((file) => relative(ROOT, file));
    expect(files.filter((file) => BACKENDS.test(file)).length).toBeGreaterThan(3);
    expect(files.flatMap((file) => workerSpawns(file, readFileSync(join(ROOT, file), "utf8")))).toEqual([]);
    // each named exception still starts a process (a stale entry would let a worker's spawn in unseen)
    const starting = Object.keys(OTHER_PROCESSES).filter(
      (file) => childProcessValues(ts.createSourceFile(file, readFileSync(join(ROOT, file), "utf8"), ts.ScriptTarget.Latest, true)).length > 0,
    );
    expect(starting).toEqual(Object.keys(OTHER_PROCESSES));
  });

  it("plugins/ takes only types from the platform client's index: `svc build` loads neither undici nor graphql", () => {
    expect(clientValues("plugins/x.ts", 'import { LIVE_PREFIX, type PlatformClient } from "../core/client/index.ts";')).toEqual(["plugins/x.ts: LIVE_PREFIX"]);
    const files = sourceFiles(join(ROOT, "plugins")).map((file) => relative(ROOT, file));
    expect(files.flatMap((file) => clientValues(file, readFileSync(join(ROOT, file), "utf8")))).toEqual([]);
  });

  it("a plugin imports no other plugin: they share core and plugins/'s own `_*` modules (plugins/index.ts lists them all)", () => {
    const isPlugin = (path: string) => /^plugins\/(?!_|index\.ts$)[\w-]+/.test(path);
    const room = (path: string) => path.split("/")[1]!;
    const crossings = [...importGraph()].flatMap(([from, targets]) =>
      isPlugin(from) ? targets.filter((to) => isPlugin(to) && room(to) !== room(from)).map((to) => `${from} -> ${to}`) : [],
    );
    expect(crossings).toEqual([]);
  });
});
