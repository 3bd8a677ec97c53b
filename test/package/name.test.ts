/**
 * The package is @svc-dev/svc (core/package-root.ts PACKAGE_NAME; `svc` on npm is another
 * project's): no source, fixture, template, example, doc or test imports it by another name, which
 * would fail to resolve once installed (docs/architecture.md, "The published build"). Every
 * repository file is read, so a fixture added with the old name fails here.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { PACKAGE_NAME } from "../../core/package-root.ts";

const ROOT = resolve(import.meta.dirname, "../..");
/** `from "svc"`, `import("svc/testing")`, `declare module "svc/types"`, `"svc": ">=0.1.0"` (a dependency on the old name). */
const OLD_NAME = /(?:\bfrom\s*|\bimport\s*\(\s*|declare module\s*)["']svc(?:\/[\w-]+)?["']|^\s*"svc"\s*:\s*"[\^~>=<*\d][^"]*"/gm;

function oldNameUses(text: string): string[] {
  return [...text.matchAll(OLD_NAME)].map((match) => match[0].trim());
}

describe("the package name", () => {
  it("the check finds imports and dependencies under the old name", () => {
    expect(
      oldNameUses(
        `import { a } from "svc";\nconst t = await import('svc/testing');\ndeclare module "svc/types" {}\n  "svc": ">=0.1.0"\n"svc": "./bin/svc.mjs"\nimport "@svc-dev/svc";`,
      ),
    ).toEqual(['from "svc"', "import('svc/testing'", 'declare module "svc/types"', '"svc": ">=0.1.0"']);
  });

  it(`is ${PACKAGE_NAME} in every tracked file that names it`, () => {
    expect(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).name).toBe(PACKAGE_NAME);
    const files = readdirSync(ROOT, { recursive: true, encoding: "utf8" })
      // the repository's files: not installed packages (but the fixtures' own), builds or caches
      .filter((file) => !/(^|\/)(\.git|dist|\.svc|\.platform)\//.test(file) && !/^node_modules\/|examples\/[^/]+\/node_modules\//.test(file))
      .filter((file) => /\.(m|c)?[jt]s$|\.md$|package\.json$/.test(file) && file !== "test/package/name.test.ts");
    expect(files.length).toBeGreaterThan(100);
    const found = files.flatMap((file) => {
      return oldNameUses(readFileSync(join(ROOT, file), "utf8")).map((use) => `${file}: ${use}`);
    });
    expect(found).toEqual([]);
  });
});
