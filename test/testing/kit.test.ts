/**
 * svc/testing, the plugin author's kit (docs/plugins.md, "Testing one"): a plugin tapping upload,
 * provision and configure runs against a real embedded platform that the kit starts in a temporary
 * folder and stops; the build runs in a temporary copy and never writes into the fixture; a platform
 * from startTestPlatform() stays up so the test can call what was deployed (a real Python worker).
 */
import { readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOOK_ORDER } from "../../core/pipeline.ts";
import type { DeployedEndpoint, SvcPlugin } from "../../core/types.ts";
import { buildFolder, startTestPlatform, type TestPlatform } from "../../testing/index.ts";

const FIXTURE = resolve(import.meta.dirname, "../../fixtures/deploy-app");
const PLUGIN = "svc-plugin-deploy-probe";

/** Every file under `dir` with its size and mtime: what a build must leave as it was. */
function snapshot(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .sort()
    .map((file) => {
      const stat = statSync(join(dir, file));
      return `${file} ${stat.size} ${stat.mtimeMs}`;
    });
}

interface Seen {
  url?: string;
  buildId?: string;
  provisioned: DeployedEndpoint[];
  onPlatform: string[];
}

/** Taps the three deploy stages after the built-ins and records what each saw. */
function deployProbe(seen: Seen): SvcPlugin {
  return {
    name: PLUGIN,
    apply(pipeline) {
      const stage = { name: PLUGIN, stage: HOOK_ORDER.AFTER_BUILTINS };
      pipeline.hooks.upload.tapPromise(stage, async (buildId, ctx) => {
        seen.url = ctx.client?.url;
        seen.buildId = buildId;
        return buildId;
      });
      pipeline.hooks.provision.tapPromise(stage, async (deployed) => {
        seen.provisioned = [...deployed];
        return deployed;
      });
      pipeline.hooks.configure.tapPromise(stage, async (_deployed, ctx) => {
        seen.onPlatform = (await ctx.client!.listEndpoints()).map((endpoint) => endpoint.name).sort();
      });
    },
  };
}

describe("buildFolder until configure", () => {
  it("runs a plugin's upload, provision and configure taps against a platform the kit starts and stops, in a copy of the fixture", async () => {
    const before = snapshot(FIXTURE);
    const seen: Seen = { provisioned: [], onPlatform: [] };
    const ctx = await buildFolder(FIXTURE, { until: "configure", plugins: [deployProbe(seen)] });

    expect(seen.buildId).toMatch(/\S/);
    expect(seen.buildId).toBe(ctx.upload?.buildId);
    expect(seen.provisioned.map((endpoint) => endpoint.name).sort()).toEqual(["api", "hello"]);
    expect(seen.onPlatform).toEqual(["api", "hello"]);
    expect(ctx.deployed.every((endpoint) => endpoint.url.startsWith(seen.url!))).toBe(true);

    // the build ran in a copy of the same name; the fixture is as it was
    expect(ctx.root).not.toBe(FIXTURE);
    expect(ctx.root.endsWith("/deploy-app")).toBe(true);
    expect(ctx.artifact!.path.startsWith(ctx.root)).toBe(true);
    expect(snapshot(FIXTURE)).toEqual(before);

    // the kit's platform is stopped once the build is over
    await expect(fetch(`${seen.url}/health`)).rejects.toThrow();
  });

  it("reports a deploy-stage plugin's failure as PLUGIN_ERROR naming the plugin and the hook", async () => {
    const failing: SvcPlugin = {
      name: PLUGIN,
      apply(pipeline) {
        pipeline.hooks.provision.tapPromise(PLUGIN, async () => {
          throw new Error("quota exceeded");
        });
      },
    };
    await expect(buildFolder(FIXTURE, { until: "configure", plugins: [failing] })).rejects.toMatchObject({
      code: "PLUGIN_ERROR",
      plugin: PLUGIN,
      hook: "provision",
    });
  });
});

describe("startTestPlatform", () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform();
  });
  afterAll(async () => {
    await platform?.close();
  });

  it("keeps its platform up after the build, so the test calls the deployed endpoint (a real worker)", async () => {
    const ctx = await buildFolder(FIXTURE, { until: "configure", platform });
    const hello = ctx.deployed.find((endpoint) => endpoint.name === "hello")!;
    const job = await platform.client.runsync(hello.id, { name: "kit" }, { timeoutMs: 90_000 });
    expect(job).toMatchObject({ status: "COMPLETED", output: { greeting: "Hello, kit!" } });
  }, 120_000);
});
