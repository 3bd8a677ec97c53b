/**
 * One bad app per error under fixtures/errors/<case>/, each with an expected.json
 * { code, file?, line?, message (substring), remedy? (substring), strict?, config? }: the front half
 * of the build must fail exactly so. A `strict` case runs `svc build --strict --no-deps` up to the
 * import check instead, with `config` as svc.config.ts's.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createContext, defaultBuildOptions } from "../../core/build.ts";
import { resolveConfig } from "../../core/config.ts";
import { SvcError } from "../../core/errors.ts";
import { createLogger } from "../../core/logger.ts";
import type { SvcConfig } from "../../core/types.ts";
import { Pipeline } from "../../core/pipeline.ts";
import { checkImports } from "../../plugins/check-imports.ts";
import { excludePreinstalled } from "../../plugins/exclude-preinstalled.ts";
import { resolveDeps } from "../../plugins/resolve-deps.ts";
import { FIXTURES, buildUntilManifest, caught, frontHalfPlugins } from "./_front-half.ts";

const ERRORS = join(FIXTURES, "errors");
const cases = readdirSync(ERRORS).filter((name) => existsSync(join(ERRORS, name, "expected.json")));

interface Expected {
  code: string;
  file?: string;
  line?: number;
  message: string;
  remedy?: string;
  strict?: boolean;
  config?: SvcConfig;
}

/** `svc build --strict --no-deps` without packing: discovery to the import check. */
async function buildStrict(root: string, config: SvcConfig = {}) {
  const ctx = createContext(root, await resolveConfig(root, config), { ...defaultBuildOptions, noDeps: true, strict: true }, createLogger("silent"));
  return new Pipeline([...frontHalfPlugins(), resolveDeps(), excludePreinstalled(), checkImports()]).run(ctx);
}

describe("error fixtures", () => {
  it("covers every error the front half raises", () => {
    expect(cases).toEqual(
      expect.arrayContaining([
        "duplicate-endpoint",
        "duplicate-function",
        "duplicate-route",
        "execution-timeout-too-long",
        "execution-timeout-too-short",
        "ignored-file",
        "import-excluded-by-user",
        "import-not-installed",
        "batch-generator",
        "invalid-batch",
        "invalid-gpu",
        "invalid-schedule",
        "mixed-kinds",
        "no-endpoints",
        "non-static-argument",
        "reserved-route",
        "syntax-error",
      ]),
    );
  });

  it.each(cases)("%s", async (name) => {
    const expected = JSON.parse(readFileSync(join(ERRORS, name, "expected.json"), "utf8")) as Expected;
    const error = await caught(() => (expected.strict ? buildStrict(join(ERRORS, name), expected.config) : buildUntilManifest(join(ERRORS, name))));
    expect(error).toBeInstanceOf(SvcError);
    expect({ code: error.code, file: error.file, line: error.line }).toEqual({ code: expected.code, file: expected.file, line: expected.line });
    expect(error.message).toContain(expected.message);
    if (expected.remedy) expect(error.remedy).toContain(expected.remedy);
  });
});
