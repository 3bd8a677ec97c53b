/** Refusals the CLI makes before it starts anything: a --root that is no folder, a volume path it cannot use. */
import { describe, expect, it } from "vitest";
import { projectRoot } from "../../cli/_shared.ts";
import { parseVolumePath } from "../../cli/volume/volume-path.ts";

const thrown = (fn: () => unknown): { code?: string; message?: string } => {
  try {
    fn();
  } catch (error) {
    return error as { code?: string; message?: string };
  }
  throw new Error("expected a refusal");
};

describe("CLI refusals", () => {
  it("PROJECT_NOT_FOUND for a --root that does not exist or is a file", () => {
    expect(thrown(() => projectRoot({ root: "/nonexistent/svc-project" })).code).toBe("PROJECT_NOT_FOUND");
    expect(thrown(() => projectRoot({ root: "/etc/hostname" })).code).toBe("PROJECT_NOT_FOUND");
    expect(projectRoot({ root: "/tmp" })).toBe("/tmp");
  });

  it("VOLUME_PATH_INVALID for a volume path without a name, with . or .. segments, or an empty segment", () => {
    for (const [text, why] of [
      [":models/a.bin", /volume name is missing/],
      ["vol:models/../etc", /'\.' and '\.\.'/],
      ["vol:models//a.bin", /empty segment/],
    ] as const) {
      const error = thrown(() => parseVolumePath(text));
      expect(error.code, text).toBe("VOLUME_PATH_INVALID");
      expect(error.message).toMatch(why);
    }
    expect(parseVolumePath("vol:/models/a.bin")).toEqual({ volume: "vol", path: "models/a.bin" });
  });
});
