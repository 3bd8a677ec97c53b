/**
 * One-way layers (DESIGN.md, docs/architecture.md): core/ imports nothing from plugins/, platform/ or
 * cli/ — static, re-export and dynamic imports alike, found by TypeScript's own import scanner.
 * The embedded platform's start reaches core/client from the CLI (resolvePlatform's startEmbedded).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(new URL("../..", import.meta.url).pathname);
const FORBIDDEN = ["plugins", "platform", "cli"];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(m|c)?ts$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** `file: specifier` for every import in `text` (the source of `file`) that lands in a forbidden top-level folder. */
function crossings(file: string, text = readFileSync(file, "utf8")): string[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles
    .map((imported) => imported.fileName)
    .filter((specifier) => specifier.startsWith("."))
    .filter((specifier) => FORBIDDEN.includes(relative(ROOT, resolve(dirname(file), specifier)).split(/[\\/]/)[0]!))
    .map((specifier) => `${relative(ROOT, file)}: ${specifier}`);
}

describe("layers", () => {
  it("the check sees static, re-export and dynamic imports", () => {
    const text = 'import "../../platform/a.ts";\nexport * from "../../cli/b.ts";\nconst x = await import("../../plugins/c.ts");\nimport "./fine.ts";\n';
    expect(crossings(join(ROOT, "core", "client", "probe.ts"), text)).toEqual([
      "core/client/probe.ts: ../../platform/a.ts",
      "core/client/probe.ts: ../../cli/b.ts",
      "core/client/probe.ts: ../../plugins/c.ts",
    ]);
  });

  it("core/ imports nothing from plugins/, platform/ or cli/", () => {
    const files = sourceFiles(join(ROOT, "core"));
    expect(files.length).toBeGreaterThan(5);
    expect(files.flatMap((file) => crossings(file))).toEqual([]);
  });
});
