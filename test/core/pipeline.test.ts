import { describe, expect, it } from "vitest";
import { createContext, resolvePluginList } from "../../core/build.ts";
import { resolveConfig } from "../../core/config.ts";
import { createLogger } from "../../core/logger.ts";
import { errors, pluginError, type SvcError } from "../../core/errors.ts";
import { HOOK_ORDER, Pipeline, STAGES, definePlugin } from "../../core/pipeline.ts";
import type { SvcPlugin } from "../../core/types.ts";
import { PLUGIN_NAME as PIP_INSTALL } from "../../plugins/pip-install.ts";

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
      (pipeline.hooks as unknown as Record<string, unknown>).discover = null;
    }).toThrow(TypeError);
  });

  it("has one hook per stage in the documented order", () => {
    const pipeline = new Pipeline([]);
    expect(STAGES).toEqual([
      "discover",
      "group",
      "generateHandlers",
      "manifest",
      "resolveDependencies",
      "installDependencies",
      "pack",
      "afterPack",
      "upload",
      "provision",
      "configure",
    ]);
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

describe("errors thrown inside plugins", () => {
  const thrown = () => Object.assign(new Error("plugin exploded"), { code: "BOOM" });

  it("become PLUGIN_ERROR naming the plugin and the hook, keeping the message and the code (sync, promise and callback taps)", async () => {
    const cases: Array<[string, SvcPlugin]> = [
      [
        "group",
        plugin("svc-plugin-sync", (p) =>
          p.hooks.group.tap("any-tap-name", () => {
            throw thrown();
          }),
        ),
      ],
      [
        "manifest",
        plugin("svc-plugin-promise", (p) =>
          p.hooks.manifest.tapPromise("x", async () => {
            throw thrown();
          }),
        ),
      ],
      ["discover", plugin("svc-plugin-callback", (p) => p.hooks.discover.tapAsync("x", (_fns, _ctx, done) => done(thrown())))],
    ];
    for (const [hook, failing] of cases) {
      const error = (await new Pipeline([failing]).run(await context()).catch((e: unknown) => e)) as SvcError;
      expect(error).toMatchObject({ code: "PLUGIN_ERROR", plugin: failing.name, hook, pluginCode: "BOOM" });
      expect(error.message).toContain(`Plugin "${failing.name}" failed in hook "${hook}": plugin exploded [BOOM]`);
      expect(error.message).toMatch(/at .*pipeline\.test\.ts:\d+:\d+/);
      expect((error.cause as Error).message).toBe("plugin exploded");
    }
  });

  it("an error with its own code and remedy is the plugin's verdict (PLUGIN_REFUSED), not a crash", async () => {
    const verdict = pluginError("SECRET_FOUND", "app/key.pem holds a private key", {
      remedy: "Move the key out of the app folder.",
      file: "app/key.pem",
      line: 1,
    });
    const refusing = plugin("svc-plugin-verdict", (p) =>
      p.hooks.manifest.tapPromise("x", async () => {
        throw verdict;
      }),
    );
    const error = (await new Pipeline([refusing]).run(await context()).catch((e: unknown) => e)) as SvcError;
    expect(error).toMatchObject({
      code: "PLUGIN_REFUSED",
      plugin: "svc-plugin-verdict",
      hook: "manifest",
      pluginCode: "SECRET_FOUND",
      file: "app/key.pem",
      line: 1,
    });
    expect(error.message).toContain('Plugin "svc-plugin-verdict" refused the build in hook "manifest": [SECRET_FOUND] app/key.pem holds a private key');
    expect(error.remedy).toBe("Move the key out of the app folder.");
    // a plain object with the same fields, from a plugin that does not import svc, reads the same
    const plain = plugin("svc-plugin-plain", (p) =>
      p.hooks.group.tap("x", () => {
        throw Object.assign(new Error("no"), { code: "NOPE", remedy: "Do this." });
      }),
    );
    expect(await new Pipeline([plain]).run(await context()).catch((e: unknown) => e)).toMatchObject({
      code: "PLUGIN_REFUSED",
      pluginCode: "NOPE",
      remedy: "Do this.",
    });
  });

  it("in apply() names the hook apply", () => {
    const error = (() => {
      try {
        return new Pipeline([
          plugin("svc-plugin-bad", () => {
            throw thrown();
          }),
        ]);
      } catch (e) {
        return e;
      }
    })() as SvcError;
    expect(error).toMatchObject({ code: "PLUGIN_ERROR", plugin: "svc-plugin-bad", hook: "apply" });
  });

  it("pass through unchanged when they are svc's own catalogue errors", async () => {
    const own = errors.NO_ENDPOINTS();
    const error = await new Pipeline([
      plugin("svc:x", (p) =>
        p.hooks.group.tap("svc:x", () => {
          throw own;
        }),
      ),
    ])
      .run(await context())
      .catch((e: unknown) => e);
    expect(error).toBe(own);
  });
});

describe("the plugin kit", () => {
  it("HOOK_ORDER runs a tap before or after the built-ins' default taps, whatever the plugin order", async () => {
    const ran: string[] = [];
    const tapAt = (name: string, stage?: number) => plugin(name, (p) => p.hooks.group.tap({ name, stage }, (endpoints) => (ran.push(name), endpoints)));
    await new Pipeline([
      tapAt("after", HOOK_ORDER.AFTER_BUILTINS),
      tapAt("builtin"),
      tapAt("before", HOOK_ORDER.BEFORE_BUILTINS),
      tapAt("last", HOOK_ORDER.LAST),
      tapAt("first", HOOK_ORDER.FIRST),
    ]).run(await context());
    expect(ran).toEqual(["first", "before", "builtin", "after", "last"]);
  });

  it("definePlugin returns the plugin or the factory it is given", () => {
    const factory = (options: { n: number }) => plugin(`svc-plugin-${options.n}`, () => {});
    expect(definePlugin(factory)).toBe(factory);
    expect(definePlugin(factory)({ n: 2 }).name).toBe("svc-plugin-2");
  });

  it("ctx.meta gives a declared key its type (svc:pip-install's, declared by that plugin)", async () => {
    const ctx = await context();
    ctx.meta.set(PIP_INSTALL, { ran: false, cacheHit: true, pruned: [], hash: "abc" });
    const hash: string | undefined = ctx.meta.get(PIP_INSTALL)?.hash;
    expect(hash).toBe("abc");
    // @ts-expect-error a declared key takes only its declared shape (npm test's typecheck fails if it does not)
    ctx.meta.set(PIP_INSTALL, { ran: "yes" });
    ctx.meta.set("svc-plugin-undeclared", 1);
    expect(ctx.meta.get("svc-plugin-undeclared")).toBe(1);
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

describe("disablePlugins", () => {
  const builtins = [plugin("svc:tar-pack", () => {}), plugin("svc:analyze", () => {})];

  it("a name that is no plugin's is CONFIG_INVALID with the closest name", async () => {
    const typo = await resolveConfig(root, { disablePlugins: ["svc:tar-pak"] });
    expect(() => resolvePluginList(typo, builtins)).toThrow(
      /disablePlugins names "svc:tar-pak", which is no plugin of this build; did you mean "svc:tar-pack"\?/,
    );
    const far = await resolveConfig(root, { disablePlugins: ["something-else"] });
    expect(() => resolvePluginList(far, builtins)).toThrow(/\(the built-ins are svc:tar-pack, svc:analyze\)/);
    const userPlugin = await resolveConfig(root, { plugins: [plugin("svc-plugin-x", () => {})], disablePlugins: ["svc-plugin-x"] });
    expect(resolvePluginList(userPlugin, builtins).map((p) => p.name)).toEqual(["svc:tar-pack", "svc:analyze"]);
  });
});
