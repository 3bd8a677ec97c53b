/**
 * Config mistakes caught before any work, one fixture folder per case under
 * fixtures/config-errors/<case>/ (svc.config.ts + expected.json { code, message (substring) }),
 * built with svc's real built-in plugins as `svc build` does: nothing is left in .svc/.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runBuild } from "../../plugins/index.ts";
import { SvcError } from "../../core/errors.ts";
import { captureLogger, copyFixture, FIXTURES } from "../plugins/_helpers.ts";
import { rejection } from "../_support/rejection.ts";

const CASES = join(FIXTURES, "config-errors");
const cases = readdirSync(CASES).filter((name) => existsSync(join(CASES, name, "expected.json")));

describe("config errors", () => {
  it("has the cases of issue 22", () => {
    expect(cases).toEqual(expect.arrayContaining(["plugin-typo", "stage-disabled"]));
  });

  it.each(cases)("%s", async (name) => {
    const expected = JSON.parse(readFileSync(join(CASES, name, "expected.json"), "utf8")) as { code: string; message: string };
    const root = copyFixture(`config-errors/${name}`);
    const error = (await rejection(runBuild({ root, logger: captureLogger(), options: { until: "pack", noDeps: true } }))) as SvcError;
    expect(error).toBeInstanceOf(SvcError);
    expect(error.code).toBe(expected.code);
    expect(error.message).toContain(expected.message);
    expect(existsSync(join(root, ".svc", ".build"))).toBe(false);
    expect(existsSync(join(root, ".svc", "artifact.tar.gz"))).toBe(false);
  });

  it("--analyze with svc:analyze disabled says the flag has no effect and why; the build goes on", async () => {
    const root = copyFixture("config-errors/analyze-disabled");
    const logger = captureLogger();
    const ctx = await runBuild({ root, logger, options: { until: "pack", noDeps: true, analyze: true } });
    expect(ctx.artifact).toBeDefined();
    expect(logger.warnings).toContainEqual(
      expect.stringMatching(/^--analyze has no effect: disablePlugins in svc\.config\.ts removes svc:analyze, the plugin that writes \.svc\/analyze\.html/),
    );
    expect(existsSync(join(root, ".svc", "analyze.html"))).toBe(false);
    const quiet = captureLogger();
    await runBuild({ root, logger: quiet, options: { until: "pack", noDeps: true } });
    expect(quiet.warnings.filter((w) => w.includes("--analyze"))).toEqual([]);
  });
});
