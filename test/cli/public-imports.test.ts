/**
 * cli/ uses only public exports of the other folders (docs/architecture.md): plugins/ through their
 * index files (the built-in list and shared helpers from plugins/index.ts), and no private `_*.ts`
 * module of core/, plugins/, platform/ or dev/.
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

  it("reach no private module of another folder", () => {
    expect(cliImports().filter((edge) => /-> (core|plugins|platform|dev)\/(.*\/)?_[^/]*$/.test(edge))).toEqual([]);
  });
});
