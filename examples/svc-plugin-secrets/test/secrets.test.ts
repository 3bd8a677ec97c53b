/**
 * svc-plugin-secrets under svc/testing: the real pipeline on temporary copies of the fixtures, and
 * a deploy through upload, provision and configure on an embedded platform the kit starts and stops.
 */
import { join } from "node:path";
import { buildFolder } from "@svc-dev/svc/testing";
import { describe, expect, it } from "vitest";
import secrets, { PLUGIN_NAME, SECRET_FOUND } from "../index.mjs";

const fixture = (name: string) => join(import.meta.dirname, "fixtures", name);

describe("svc-plugin-secrets", () => {
  it("refuses to pack an app holding a key, naming file, line and what it is", async () => {
    const refused = buildFolder(fixture("leaky-app"), { plugins: [secrets()], options: { noDeps: true } });
    await expect(refused).rejects.toMatchObject({ code: "PLUGIN_REFUSED", plugin: PLUGIN_NAME, hook: "pack", pluginCode: SECRET_FOUND });
    const error = (await refused.catch((caught: unknown) => caught)) as Error;
    expect(error.message).toContain("hello.py:5: an AWS access key id");
    expect(error.message).toContain("fake_keys.py:2: a private key");
  });

  it("skips the files its allow option lists", async () => {
    const error = (await buildFolder(fixture("leaky-app"), { plugins: [secrets({ allow: ["fake_keys.py"] })], options: { noDeps: true } }).catch(
      (caught: unknown) => caught,
    )) as Error;
    expect(error.message).toContain("hello.py:5: an AWS access key id");
    expect(error.message).not.toContain("fake_keys.py");
  });

  it("checks its options with its zod schema: an unknown key names the closest one, a wrong type its field", () => {
    expect(() => secrets({ alow: ["fake_keys.py"] } as never)).toThrow(/unknown option "alow" \(did you mean "allow"\?\)/);
    const error = (() => {
      try {
        secrets({ envFile: 3 } as never);
      } catch (caught) {
        return caught as { code: string; message: string };
      }
    })();
    expect(error).toMatchObject({ code: "PLUGIN_OPTIONS_INVALID" });
    expect(error!.message).toContain("envFile");
  });

  it("lets a clean app pack, and records what it scanned", async () => {
    const ctx = await buildFolder(fixture("clean-app"), { plugins: [secrets()], options: { noDeps: true } });
    expect(ctx.artifact?.entries.map((entry) => entry.path)).toContain("hello.py");
    expect(ctx.meta.get(PLUGIN_NAME)).toEqual({ scanned: 1 });
  });

  it("stays out of the way of a deploy: upload, provision and configure on the kit's platform", async () => {
    const ctx = await buildFolder(fixture("clean-app"), { until: "configure", plugins: [secrets()], options: { noDeps: true } });
    expect(ctx.deployed.map((endpoint) => endpoint.name)).toEqual(["hello"]);
    expect(ctx.deployed[0]!.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
  });
});
