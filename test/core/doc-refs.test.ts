/**
 * A remedy that says where to read more points where a user of the package can read it: the docs
 * ship in the package (package.json `files`), and every remedy names them through docRef — the
 * doc's path in svc's own folder, which exists — never a bare "docs/…" relative to nothing.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { docRef, errors } from "../../core/errors.ts";

const REPO = join(import.meta.dirname, "..", "..");

describe("remedies that point at the docs", () => {
  it("the package ships docs/, and docRef names a file that exists there", () => {
    const files = (JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { files: string[] }).files;
    expect(files).toContain("docs");
    const ref = docRef("platform.md", "Limits");
    expect(ref).toMatch(/^\/.*\/docs\/platform\.md, "Limits"$/);
    expect(existsSync(ref.split(",")[0]!)).toBe(true);
  });

  it("no message or remedy of the catalogue names a bare docs/ path, and each doc and section it names exists", () => {
    const source = readFileSync(join(REPO, "core", "errors.ts"), "utf8");
    const strings = [...source.matchAll(/(["`])(?:(?!\1)[^\\]|\\.)*\1/g)].map((m) => m[0]);
    expect(strings.filter((s) => /(^|[\s(])docs\/[\w-]+\.md/.test(s))).toEqual([]);
    for (const [, file, section] of source.matchAll(/docRef\("([\w-]+\.md)"(?:, "([^"]+)")?\)/g)) {
      const text = readFileSync(join(REPO, "docs", file!), "utf8");
      if (section) expect(text, `${file}: ${section}`).toMatch(new RegExp(`^#+ ${section.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`, "m"));
    }
    expect(errors.JSON_TOO_DEEP("The body", 64).remedy).toContain(join(REPO, "docs", "platform.md"));
  });
});
