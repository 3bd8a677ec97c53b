/**
 * One-way layers (DESIGN.md, docs/architecture.md), over every source folder — static, re-export,
 * type-only and dynamic imports alike, found by TypeScript's own import scanner:
 * - each folder imports only the folders below it (LAYERS);
 * - an import into another folder reaches that folder's public modules only (PUBLIC): never a
 *   private `_*.ts` module, plugins/ through index files, platform/ through index.ts or its light
 *   entry local.ts, dev/ through index.ts;
 * - no two files import each other, directly or round a loop (type-only imports count: a loop of
 *   types is a loop a reader must hold in their head as well).
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

  it("a plugin imports no other plugin: they share core and plugins/'s own `_*` modules (plugins/index.ts lists them all)", () => {
    const isPlugin = (path: string) => /^plugins\/(?!_|index\.ts$)[\w-]+/.test(path);
    const room = (path: string) => path.split("/")[1]!;
    const crossings = [...importGraph()].flatMap(([from, targets]) =>
      isPlugin(from) ? targets.filter((to) => isPlugin(to) && room(to) !== room(from)).map((to) => `${from} -> ${to}`) : [],
    );
    expect(crossings).toEqual([]);
  });
});
