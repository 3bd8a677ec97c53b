/**
 * cli/ reaches plugins/ only through their public index files (docs/architecture.md): the list of
 * built-ins and the helpers the commands share come from plugins/index.ts, the dev server from its own.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");

/** `file -> target` (repository-relative) for every relative import of a cli/ source file. */
function cliImports(): string[] {
  return readdirSync(join(ROOT, "cli"), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .flatMap((file) => {
      const abs = join(ROOT, "cli", file);
      return ts
        .preProcessFile(readFileSync(abs, "utf8"), true, true)
        .importedFiles.map((imported) => imported.fileName)
        .filter((specifier) => specifier.startsWith("."))
        .map((specifier) => `cli/${file} -> ${relative(ROOT, resolve(dirname(abs), specifier))}`);
    });
}

describe("cli/ imports", () => {
  it("reach plugins/ only through index files", () => {
    const edges = cliImports();
    expect(edges).toContain("cli/_build.ts -> plugins/index.ts");
    expect(edges.filter((edge) => /-> plugins\//.test(edge) && !/-> plugins\/([\w-]+\/)?index\.ts$/.test(edge))).toEqual([]);
  });
});
