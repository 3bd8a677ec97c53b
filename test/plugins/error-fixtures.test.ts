/**
 * One bad app per error under fixtures/errors/<case>/, each with an expected.json
 * { code, file?, line?, message (substring) }: the front half of the build must fail exactly so.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SvcError } from "../../core/errors.ts";
import { FIXTURES, buildUntilManifest, caught } from "./_front-half.ts";

const ERRORS = join(FIXTURES, "errors");
const cases = readdirSync(ERRORS).filter((name) => existsSync(join(ERRORS, name, "expected.json")));

interface Expected {
  code: string;
  file?: string;
  line?: number;
  message: string;
}

describe("error fixtures", () => {
  it("covers every error the front half raises", () => {
    expect(cases).toEqual(
      expect.arrayContaining([
        "duplicate-endpoint",
        "duplicate-function",
        "duplicate-route",
        "ignored-file",
        "invalid-gpu",
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
    const error = await caught(() => buildUntilManifest(join(ERRORS, name)));
    expect(error).toBeInstanceOf(SvcError);
    expect({ code: error.code, file: error.file, line: error.line }).toEqual({ code: expected.code, file: expected.file, line: expected.line });
    expect(error.message).toContain(expected.message);
  });
});
