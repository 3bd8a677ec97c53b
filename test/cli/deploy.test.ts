/**
 * `svc deploy` / `svc undeploy` behaviour: the real pipeline (discover → … → configure) on
 * fixtures/deploy-app, deploying through core/client to the platform test double
 * (test/_support/fake-platform.ts).
 */
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import type { SvcError } from "../../core/errors.ts";
import { connect } from "../../cli/_platform.ts";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { formatDeploySummary } from "../../cli/commands/_deploy-output.ts";
import { deleteEnvironmentEndpoints, undeployTargets } from "../../cli/commands/undeploy.ts";
import { startFakePlatform, type FakePlatform } from "../_support/fake-platform.ts";

const FIXTURE = new URL("../../fixtures/deploy-app/", import.meta.url).pathname;

async function rejection(promise: Promise<unknown>): Promise<SvcError> {
  try {
    await promise;
  } catch (error) {
    return error as SvcError;
  }
  throw new Error("expected a rejection");
}

describe("svc deploy (platform test double)", () => {
  let fake: FakePlatform;
  let client: PlatformClient;
  let root: string;
  const lines: string[] = [];
  const logger = createLogger("info", (line) => lines.push(line));
  const deploy = (env?: string) => runDeploy({ root, client, env, logger });

  beforeAll(async () => {
    fake = await startFakePlatform();
    client = createPlatformClient({ url: fake.url, apiKey: fake.apiKey });
    root = await mkdtemp(join(tmpdir(), "svc-deploy-"));
    await cp(FIXTURE, root, { recursive: true });
  });
  afterAll(async () => {
    await fake.close();
    await rm(root, { recursive: true, force: true });
  });

  it("first deploy creates the app and `production`, uploads, provisions one endpoint per manifest endpoint", async () => {
    const { ctx, summary } = await deploy();
    const app = await client.getApp("deploy-app");
    expect(app?.environments.map((e) => e.name)).toEqual(["production"]);
    const production = app!.environments[0]!;
    expect(production.activeBuildId).toBe(ctx.buildId);
    expect(fake.puts).toHaveLength(1);
    expect(ctx.upload).toEqual({ buildId: ctx.buildId, skipped: false });

    const byName = Object.fromEntries(production.endpoints.map((e) => [e.name, e]));
    expect(Object.keys(byName).sort()).toEqual(["api", "hello"]);
    expect(byName.hello).toMatchObject({ type: "QB", instanceIds: ["cpu3c-2-4"], imageName: "svc/worker-cpu:py3.11-slim", workersMin: 0, workersMax: 1, buildId: ctx.buildId, environmentId: production.id });
    expect(byName.api).toMatchObject({ type: "LB", scalerType: "REQUEST_COUNT" });

    // URLs recorded on the build (cross-endpoint calls) and in .svc/svc_manifest.json.
    const urls = { hello: byName.hello!.url, api: byName.api!.url };
    expect((await client.getBuild(ctx.buildId!))?.manifest.urls).toEqual(urls);
    expect(JSON.parse(await readFile(join(root, ".svc/svc_manifest.json"), "utf8")).urls).toEqual(urls);

    // The listing: grouped by type, runsync URL + curl for QB, routes for LB.
    const text = formatDeploySummary(summary);
    expect(text).toContain("Queue-based endpoints");
    expect(text).toContain(`${urls.hello}/runsync`);
    expect(text).toContain("curl -X POST");
    expect(text).toContain("Load-balanced endpoints");
    expect(text).toMatch(new RegExp(`POST\\s+${urls.api}/echo`));
    expect(text).toMatch(new RegExp(`GET\\s+${urls.api}/health`));

    // The deployed endpoint answers through the client.
    fake.queue.handler = (_id, input) => ({ greeting: `Hello, ${input.name}!` });
    expect((await client.runsync(byName.hello!.id, { name: "Ada" })).output).toEqual({ greeting: "Hello, Ada!" });
  });

  it("a second deploy with no change skips the upload and updates the same endpoints", async () => {
    const before = (await client.getApp("deploy-app"))!.environments[0]!.endpoints.map((e) => e.id).sort();
    lines.length = 0;
    const { ctx } = await deploy();
    expect(ctx.upload?.skipped).toBe(true);
    expect(fake.puts).toHaveLength(1);
    expect(lines.some((line) => line.includes("upload skipped"))).toBe(true);
    const after = (await client.getApp("deploy-app"))!.environments[0]!.endpoints;
    expect(after.map((e) => e.id).sort()).toEqual(before);
    expect(after.every((e) => e.buildId === ctx.buildId)).toBe(true);
    expect(lines.filter((line) => line.includes("updated endpoint"))).toHaveLength(2);
    expect(fake.state.endpoints).toHaveLength(2);
  });

  it("--env staging creates a second environment with its own endpoints", async () => {
    await deploy("staging");
    const app = (await client.getApp("deploy-app"))!;
    expect(app.environments.map((e) => e.name).sort()).toEqual(["production", "staging"]);
    const staging = app.environments.find((e) => e.name === "staging")!;
    expect(staging.endpoints.map((e) => e.name).sort()).toEqual(["api", "hello"]);
    expect(fake.state.endpoints).toHaveLength(4);
  });

  it("two environments and no --env is ENVIRONMENT_AMBIGUOUS", async () => {
    const error = await rejection(deploy());
    expect(error.code).toBe("ENVIRONMENT_AMBIGUOUS");
    expect(error.message).toContain("--env");
  });

  it("an endpoint removed from the app is deleted on the next deploy, and said so", async () => {
    await rm(join(root, "api.py"));
    lines.length = 0;
    await deploy("production");
    const production = (await client.getApp("deploy-app"))!.environments.find((e) => e.name === "production")!;
    expect(production.endpoints.map((e) => e.name)).toEqual(["hello"]);
    expect(lines.some((line) => /deleted endpoint api .*no longer in the manifest/.test(line))).toBe(true);
    // staging is untouched
    expect((await client.getApp("deploy-app"))!.environments.find((e) => e.name === "staging")!.endpoints).toHaveLength(2);
    await cp(join(FIXTURE, "api.py"), join(root, "api.py"));
  });

  it("a wrong API key is AUTH_FAILED with the remedy, before anything is built", async () => {
    const saved = { url: process.env.PLATFORM_API_URL, key: process.env.PLATFORM_API_KEY };
    process.env.PLATFORM_API_URL = fake.url;
    process.env.PLATFORM_API_KEY = "wrong-key";
    try {
      const error = await rejection(connect(root));
      expect(error.code).toBe("AUTH_FAILED");
      expect(error.message).toContain("Check that PLATFORM_API_KEY is set correctly, in .env or exported");
      const viaDeploy = await rejection(runDeploy({ root, client: createPlatformClient({ url: fake.url, apiKey: "wrong-key" }), logger }));
      expect(viaDeploy.code).toBe("AUTH_FAILED");
    } finally {
      for (const [name, value] of [["PLATFORM_API_URL", saved.url], ["PLATFORM_API_KEY", saved.key]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it("undeploy removes the endpoints of the chosen environment only", async () => {
    const envs = await undeployTargets(client, "deploy-app", { env: "staging" });
    expect(envs.map((e) => e.name)).toEqual(["staging"]);
    const deleted = await deleteEnvironmentEndpoints(client, envs);
    expect(deleted.map((d) => d.name).sort()).toEqual(["api", "hello"]);
    const app = (await client.getApp("deploy-app"))!;
    expect(app.environments.find((e) => e.name === "staging")!.endpoints).toEqual([]);
    expect(app.environments.find((e) => e.name === "production")!.endpoints).toHaveLength(1);
    expect((await rejection(undeployTargets(client, "deploy-app", {}))).code).toBe("ENVIRONMENT_AMBIGUOUS");
    const all = await undeployTargets(client, "deploy-app", { all: true });
    await deleteEnvironmentEndpoints(client, all);
    expect(fake.state.endpoints).toHaveLength(0);
  });
});
