/**
 * cli/ uses only public exports of the other folders (docs/architecture.md): plugins/ through their
 * index files (the built-in list and shared helpers from plugins/index.ts), platform/ through
 * index.ts or its light entry local.ts, and no private `_*.ts` module of core/, plugins/, platform/
 * or dev/.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
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

  it("reach platform/ only through index.ts and the light entry local.ts", () => {
    const edges = cliImports().filter((edge) => /-> platform\//.test(edge));
    expect(edges).toContain("cli/_platform.ts -> platform/local.ts");
    expect(edges.filter((edge) => !/-> platform\/(index|local)\.ts$/.test(edge))).toEqual([]);
  });
});

describe("platform/local.ts", () => {
  it("loads no server, SQLite, h3 or worker module (what svc's commands import at startup)", async () => {
    const tmp = mkdtempSync(join(tmpdir(), "svc-local-entry-"));
    try {
      const trace = join(tmp, "trace.txt");
      writeFileSync(trace, "");
      writeFileSync(join(tmp, "hooks.mjs"), `import { appendFileSync } from "node:fs";\nexport async function load(url, context, next) {\n  appendFileSync(${JSON.stringify(trace)}, url + "\\n");\n  return next(url, context);\n}\n`);
      const script = [
        `import { register } from "node:module";`,
        `register(${JSON.stringify(pathToFileURL(join(tmp, "hooks.mjs")).href)});`,
        `const tsx = await import("tsx/esm/api");`,
        `tsx.register();`,
        `const local = await import(${JSON.stringify(pathToFileURL(join(ROOT, "platform/local.ts")).href)});`,
        `if (typeof local.runningPlatform !== "function") throw new Error("runningPlatform is not exported");`,
      ].join("\n");
      await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT });
      const loaded = readFileSync(trace, "utf8").split("\n").filter(Boolean);
      expect(loaded.some((url) => url.endsWith("/platform/state-dir.ts"))).toBe(true);
      expect(loaded.filter((url) => /\/node_modules\/(h3|better-sqlite3)\/|\/platform\/(server|context|store\/|api\/|queue\/|workers\/|graphql\/)/.test(url))).toEqual([]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
