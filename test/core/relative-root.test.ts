/**
 * svc/testing's buildFolder takes a folder relative to the working folder, as docs/plugins.md
 * writes it (`buildFolder("fixtures/small-app")`), also when the folder has a svc.config.ts (whose
 * compiler needs an absolute path).
 */
import { basename, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { buildFolder } from "../../testing/index.ts";
import { copyFixture } from "../plugins/_helpers.ts";

describe("buildFolder with a relative path", () => {
  it("loads the folder's svc.config.ts and builds the manifest", async () => {
    const root = copyFixture("deploy-app");
    const given = relative(process.cwd(), root);
    expect(given.startsWith("/")).toBe(false);
    const ctx = await buildFolder(given, { until: "manifest" });
    // built in a temporary copy of the same name (svc/testing never writes into the folder given)
    expect(ctx.root).not.toBe(root);
    expect(basename(ctx.root)).toBe(basename(root));
    expect(ctx.config.configFile).toBe(`${ctx.root}/svc.config.ts`);
    expect(ctx.config.app).toBe("deploy-app");
    expect(ctx.endpoints.map((e) => e.name).sort()).toEqual(["api", "hello"]);
  });
});
