import { describe, expect, it } from "vitest";
import { createContext, resolvePluginList } from "../../core/build.ts";
import { resolveConfig } from "../../core/config.ts";
import { createLogger } from "../../core/logger.ts";
import { Pipeline, STAGES } from "../../core/pipeline.ts";
import type { SvcPlugin } from "../../core/types.ts";

const root = "/tmp/svc-pipeline-test";

async function context(until: "manifest" | "pack" = "manifest") {
  const config = await resolveConfig(root, {});
  return createContext(root, config, { until, keepBuild: false, noDeps: true, exclude: [], analyze: false }, createLogger("silent"));
}

const plugin = (name: string, apply: SvcPlugin["apply"]): SvcPlugin => ({ name, apply });

describe("Pipeline", () => {
  it("freezes its hooks at construction", () => {
    const pipeline = new Pipeline([]);
    expect(Object.isFrozen(pipeline.hooks)).toBe(true);
    expect(() => {
      (pipeline.hooks as Record<string, unknown>).discover = null;
    }).toThrow(TypeError);
  });

  it("has one hook per stage in the documented order", () => {
    const pipeline = new Pipeline([]);
    expect(STAGES).toEqual(["discover", "group", "generateHandlers", "manifest", "resolveDependencies", "installDependencies", "pack", "afterPack", "upload", "provision", "configure"]);
    for (const stage of STAGES) expect(pipeline.hooks[stage]).toBeDefined();
  });

  it("passes waterfall values from plugin to plugin and stores them on the context", async () => {
    const ctx = await context();
    const seen: string[] = [];
    const pipeline = new Pipeline([
      plugin("a", (p) => p.hooks.discover.tapPromise("a", async (fns) => [...fns, { name: "one" } as never])),
      plugin("b", (p) =>
        p.hooks.discover.tapPromise("b", async (fns) => {
          seen.push(...fns.map((f) => f.name));
          return [...fns, { name: "two" } as never];
        }),
      ),
      plugin("m", (p) => p.hooks.manifest.tap("m", () => ({ app: "x" }) as never)),
    ]);
    await pipeline.run(ctx);
    expect(seen).toEqual(["one"]);
    expect(ctx.functions.map((f) => f.name)).toEqual(["one", "two"]);
    expect(ctx.manifest).toEqual({ app: "x" });
  });

  it("stops after the stage named by options.until and times each stage", async () => {
    const ctx = await context("manifest");
    const ran: string[] = [];
    const pipeline = new Pipeline([
      plugin("t", (p) => {
        p.hooks.manifest.tap("t", (m) => (ran.push("manifest"), m));
        p.hooks.resolveDependencies.tap("t", (r) => (ran.push("deps"), r));
      }),
    ]);
    await pipeline.run(ctx);
    expect(ran).toEqual(["manifest"]);
    expect(ctx.logger.timings.map((t) => t.stage)).toEqual(["discover", "group", "generateHandlers", "manifest"]);
  });

  it("turns a tapPromise callback that returns no promise into a clear error instead of hanging", async () => {
    const ctx = await context();
    const pipeline = new Pipeline([
      // Deliberately wrong: tapPromise with a synchronous callback.
      plugin("svc-plugin-sync", (p) => p.hooks.group.tapPromise("svc-plugin-sync", ((endpoints: unknown) => endpoints) as never)),
    ]);
    const outcome = await Promise.race([
      pipeline.run(ctx).then(
        () => "resolved",
        (error) => error,
      ),
      new Promise((resolve) => setTimeout(() => resolve("hung"), 2000)),
    ]);
    expect(outcome).toMatchObject({ code: "PLUGIN_HOOK_NOT_PROMISE" });
    expect(String((outcome as Error).message)).toContain('"svc-plugin-sync"');
    expect(String((outcome as Error).message)).toContain('"group"');
  });

  it("runs the done hook even when a stage fails, with the error in ctx.meta", async () => {
    const ctx = await context();
    let doneWith: unknown;
    const pipeline = new Pipeline([
      plugin("boom", (p) => {
        p.hooks.discover.tapPromise("boom", async () => {
          throw new Error("boom");
        });
        p.hooks.done.tapPromise("boom", async (c) => {
          doneWith = c.meta.get("error");
        });
      }),
    ]);
    await expect(pipeline.run(ctx)).rejects.toThrow("boom");
    expect(String(doneWith)).toContain("boom");
  });
});

describe("resolvePluginList", () => {
  const builtins = [plugin("svc:a", () => {}), plugin("svc:b", () => {}), plugin("svc:c", () => {})];

  it("keeps built-ins in order and appends user plugins", async () => {
    const config = await resolveConfig(root, { plugins: [plugin("svc-plugin-x", () => {})] });
    expect(resolvePluginList(config, builtins).map((p) => p.name)).toEqual(["svc:a", "svc:b", "svc:c", "svc-plugin-x"]);
  });

  it("replaces a built-in by a user plugin of the same name, in place", async () => {
    const replacement = plugin("svc:b", () => {});
    const config = await resolveConfig(root, { plugins: [replacement] });
    const list = resolvePluginList(config, builtins);
    expect(list.map((p) => p.name)).toEqual(["svc:a", "svc:b", "svc:c"]);
    expect(list[1]).toBe(replacement);
  });

  it("removes disabled built-ins", async () => {
    const config = await resolveConfig(root, { disablePlugins: ["svc:c"] });
    expect(resolvePluginList(config, builtins).map((p) => p.name)).toEqual(["svc:a", "svc:b"]);
  });
});
