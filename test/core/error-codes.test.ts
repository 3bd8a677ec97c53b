/**
 * Every code of the one error catalogue (core/errors.ts) is raised by some test or fixture: its
 * name appears in a test (test/, examples' tests, the Python runtime's tests) or a fixture's
 * expected.json. The few that none raise are listed below, each with why; a code that a test
 * comes to raise must leave the list, and a new code needs a test or a line here.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { errors } from "../../core/errors.ts";

const REPO = join(import.meta.dirname, "..", "..");
const THIS_FILE = relative(REPO, import.meta.filename);

/** Codes no test raises, and why. */
const NOT_RAISED_BY_TESTS: Record<string, string> = {
  ARTIFACT_SOURCE_CHANGED: "a file that changes size between the pack's stat and its read: a race a test could only win by timing",
  JOB_WAIT_FAILED: "the platform stops answering a waiting client for longer than the client's poll retries: a test would wait out those retries",
  PLATFORM_ALREADY_RUNNING: "`svc platform start` twice on one folder needs a detached platform process; test/cli/platform.test.ts starts one but not twice",
};

function testTexts(): Map<string, string> {
  const texts = new Map<string, string>();
  const walk = (dir: string, take: (name: string) => boolean) => {
    for (const name of readdirSync(dir)) {
      if (name === "node_modules" || name.startsWith(".")) continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path, take);
      else if (take(path)) texts.set(relative(REPO, path), readFileSync(path, "utf8"));
    }
  };
  walk(join(REPO, "test"), (p) => /\.(ts|py)$/.test(p));
  walk(join(REPO, "runtime", "python", "tests"), (p) => p.endsWith(".py"));
  walk(join(REPO, "fixtures"), (p) => p.endsWith("expected.json"));
  walk(join(REPO, "examples"), (p) => /[/\\]test[/\\].*\.(ts|py)$/.test(p));
  texts.delete(THIS_FILE); // the list below names codes: it raises none
  return texts;
}

describe("the error catalogue", () => {
  it("every code is raised by some test or fixture, or listed with why not", () => {
    const texts = [...testTexts().values()];
    const unraised = Object.keys(errors).filter((code) => !texts.some((text) => new RegExp(`\\b${code}\\b`).test(text)));
    expect(unraised.sort()).toEqual(Object.keys(NOT_RAISED_BY_TESTS).sort());
  });

  it("lists only codes of the catalogue", () => {
    for (const code of Object.keys(NOT_RAISED_BY_TESTS)) expect(Object.keys(errors)).toContain(code);
  });
});
