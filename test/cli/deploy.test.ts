/**
 * `svc deploy` / `svc undeploy` behaviour on fixtures/deploy-app: first in-process against the
 * platform test double (test/_support/fake-platform.ts: fast, inspectable), then end to end
 * against a real embedded platform through the CLI.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import { connect } from "../../cli/_platform.ts";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { formatDeploySummary, type DeploySummary } from "../../cli/commands/_deploy-output.ts";
import { deleteEnvironmentEndpoints, undeployTargets } from "../../cli/commands/undeploy.ts";
import { startPlatform, type RunningPlatform } from "../../platform/index.ts";
import { startFakePlatform, type FakePlatform } from "../_support/fake-platform.ts";
import { BIN, runSvc } from "../_support/cli.ts";
import { rejection } from "../_support/rejection.ts";
import { saveEnv } from "../_support/env.ts";

const FIXTURE = new URL("../../fixtures/deploy-app/", import.meta.url).pathname;

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
    expect(byName.hello).toMatchObject({
      type: "QB",
      instanceIds: ["cpu3c-2-4"],
      imageName: "svc/worker-cpu:py3.11-slim",
      workersMin: 0,
      workersMax: 1,
      buildId: ctx.buildId,
      environmentId: production.id,
    });
    expect(byName.api).toMatchObject({ type: "LB", scalerType: "REQUEST_COUNT" });

    // URLs recorded on the build (cross-endpoint calls) and in the environment's deploy state, not in the build's manifest.
    const urls = { hello: byName.hello!.url, api: byName.api!.url };
    expect((await client.getBuild(ctx.buildId!))?.manifest.urls).toEqual(urls);
    const state = JSON.parse(await readFile(join(root, ".svc/deployments/production.json"), "utf8"));
    expect(state).toMatchObject({ app: "deploy-app", environment: "production", buildId: ctx.buildId, urls, platform: fake.url });
    expect(Object.keys(state.manifest.endpoints).sort()).toEqual(["api", "hello"]);
    expect(JSON.parse(await readFile(join(root, ".svc/svc_manifest.json"), "utf8")).urls).toBeUndefined();

    // The listing: grouped by type, runsync URL + curl for QB, routes for LB.
    const text = formatDeploySummary(summary);
    expect(text).toContain("Queue-based endpoints");
    expect(text).toContain(`${urls.hello}/runsync`);
    expect(text).toContain("curl -X POST");
    expect(text).toContain(`-d '{"input":{"name":"text"}}'`); // hello(name: str): its required parameter, so the line runs
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

  it("an --env the platform would refuse fails before the build: ENVIRONMENT_NAME_INVALID, nothing built or uploaded", async () => {
    const fresh = await mkdtemp(join(tmpdir(), "svc-deploy-badenv-"));
    await cp(FIXTURE, fresh, { recursive: true });
    const puts = fake.puts.length;
    const error = await rejection(runDeploy({ root: fresh, client, env: "bad env!", logger }));
    expect(error).toMatchObject({ code: "ENVIRONMENT_NAME_INVALID" });
    expect((error as Error).message).toContain('--env "bad env!" is not an environment name the platform accepts');
    expect(existsSync(join(fresh, ".svc"))).toBe(false);
    expect(fake.puts.length).toBe(puts);
    await rm(fresh, { recursive: true, force: true });
  });

  it("two environments and no --env is ENVIRONMENT_AMBIGUOUS", async () => {
    const error = await rejection(deploy());
    expect(error.code).toBe("ENVIRONMENT_AMBIGUOUS");
    expect(error.message).toContain("--env");
  });

  it("an endpoint removed from the app is deleted on the next deploy, and said so", async () => {
    await rm(join(root, "web.py"));
    lines.length = 0;
    await deploy("production");
    const production = (await client.getApp("deploy-app"))!.environments.find((e) => e.name === "production")!;
    expect(production.endpoints.map((e) => e.name)).toEqual(["hello"]);
    expect(lines.some((line) => /deleted endpoint api .*no longer in the manifest/.test(line))).toBe(true);
    // staging is untouched
    expect((await client.getApp("deploy-app"))!.environments.find((e) => e.name === "staging")!.endpoints).toHaveLength(2);
    await cp(join(FIXTURE, "web.py"), join(root, "web.py"));
  });

  it("a wrong API key is AUTH_FAILED with the remedy, before anything is built", async () => {
    const restore = saveEnv("PLATFORM_API_URL", "PLATFORM_API_KEY");
    process.env.PLATFORM_API_URL = fake.url;
    process.env.PLATFORM_API_KEY = "wrong-key";
    try {
      const error = await rejection(connect(root));
      expect(error.code).toBe("AUTH_FAILED");
      expect(error.message).toContain("Check that PLATFORM_API_KEY is set correctly, in .env or exported");
      const viaDeploy = await rejection(runDeploy({ root, client: createPlatformClient({ url: fake.url, apiKey: "wrong-key" }), logger }));
      expect(viaDeploy.code).toBe("AUTH_FAILED");
    } finally {
      restore();
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

/**
 * The same behaviours end to end: a REAL embedded platform started in this process
 * (startPlatform on a temp data dir, port 0), workers running the Python runtime, and the CLI
 * itself (bin/svc.mjs) for the user-facing output.
 */
describe("svc deploy on the embedded platform (e2e)", () => {
  let platform: RunningPlatform;
  let client: PlatformClient;
  let root: string;
  let dataDir: string;

  const svc = (args: string[], apiKey = platform.apiKey) =>
    runSvc([...args, "--root", root], { env: { ...process.env, PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: apiKey, NO_COLOR: "1" }, timeout: 120_000 });

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "svc-e2e-platform-"));
    root = await mkdtemp(join(tmpdir(), "svc-e2e-app-"));
    await cp(FIXTURE, root, { recursive: true });
    platform = await startPlatform({ dataDir, port: 0, log: () => {} });
    client = createPlatformClient(platform);
  });
  afterAll(async () => {
    await platform?.close();
    await rm(dataDir, { recursive: true, force: true });
    await rm(root, { recursive: true, force: true });
  });

  it("deploys, lists endpoints by type, and a runsync answers the function's output", async () => {
    const result = await svc(["deploy", "--json"]);
    expect(result.stderr).not.toContain("error");
    expect(result.code).toBe(0);
    // the whole wait is accounted for: stages, the rest of the command, the process's start-up
    expect(result.stderr).toMatch(/deployed in \S+ \S+ \(stages \S+ \S+, config, platform and clean-up \S+ \S+; start-up before it \S+ \S+\)/);
    const summary = JSON.parse(result.stdout) as DeploySummary;
    expect(summary).toMatchObject({ ok: true, app: "deploy-app", environment: "production", uploadSkipped: false });
    const hello = summary.endpoints.find((e) => e.name === "hello")!;
    const api = summary.endpoints.find((e) => e.name === "api")!;
    expect(hello.runsync).toBe(`${hello.url}/runsync`);
    expect(api.routes?.map((r) => `${r.method} ${r.path}`).sort()).toEqual(["GET /health", "POST /echo"]);

    const job = await client.runsync(hello.id, { name: "Ada" });
    expect(job.status).toBe("COMPLETED");
    expect(job.output).toEqual({ greeting: "Hello, Ada!" });
    const echo = await client.lbRequest(api.url, "POST", "/echo", { text: "hi" });
    expect(echo).toMatchObject({ status: 200, body: { echo: "hi" } });
  });

  it("a second deploy with no change skips the upload and updates the endpoints in place", async () => {
    const before = (await client.listEndpoints()).map((e) => e.id).sort();
    const result = await svc(["deploy"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("upload skipped");
    expect(result.stdout).toContain("Queue-based endpoints");
    expect(result.stdout).toContain("Load-balanced endpoints");
    expect((await client.listEndpoints()).map((e) => e.id).sort()).toEqual(before);
  });

  it("--env staging creates a second environment; then no --env is ENVIRONMENT_AMBIGUOUS", async () => {
    expect((await svc(["deploy", "--env", "staging", "--json"])).code).toBe(0);
    const app = (await client.getApp("deploy-app"))!;
    expect(app.environments.map((e) => e.name).sort()).toEqual(["production", "staging"]);
    expect(await client.listEndpoints()).toHaveLength(4);
    const ambiguous = await svc(["deploy"]);
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toContain("[ENVIRONMENT_AMBIGUOUS]");
    // reported before the build: no stage ran
    expect(ambiguous.stderr).not.toMatch(/✓ (discover|pack)/);
    const listed = await svc(["env", "list", "--json"]);
    expect(
      JSON.parse(listed.stdout)
        .environments.map((e: { name: string }) => e.name)
        .sort(),
    ).toEqual(["production", "staging"]);
  });

  // eleven CLI runs: 18 s from the sources on a quiet 2-core machine, more beside the rest of the suite
  it("app get and env get show one app or environment with its endpoints; unknown names are NOT_FOUND", { timeout: 180_000 }, async () => {
    const app = await svc(["app", "get", "deploy-app", "--json"]);
    expect(app.code, app.stderr).toBe(0);
    expect(
      JSON.parse(app.stdout)
        .app.environments.map((e: { name: string }) => e.name)
        .sort(),
    ).toEqual(["production", "staging"]);
    const table = await svc(["app", "get", "deploy-app"]);
    expect(table.stdout).toMatch(/^deploy-app\s+\S+\s+production,staging\s+4\s/m);
    expect(table.stdout).toContain("Environment staging (build ");
    expect(table.stdout).toMatch(/^hello\s+\S+\s+QB\s+0-1\s+http/m);

    const staging = (await client.getApp("deploy-app"))!.environments.find((e) => e.name === "staging")!;
    const env = await svc(["env", "get", "staging", "--json"]);
    expect(env.code, env.stderr).toBe(0);
    expect(JSON.parse(env.stdout)).toMatchObject({
      ok: true,
      app: "deploy-app",
      environment: { id: staging.id, name: "staging", activeBuildId: staging.activeBuildId },
    });
    const envTable = await svc(["env", "get", "staging"]);
    expect(envTable.stdout).toMatch(/^api\s+\S+\s+LB\s/m);

    const missingApp = await svc(["app", "get", "no-such-app"]);
    expect(missingApp.code).toBe(1);
    expect(missingApp.stderr).toContain("[NOT_FOUND]");
    const missingEnv = await svc(["env", "get", "qa"]);
    expect(missingEnv.code).toBe(1);
    expect(missingEnv.stderr).toContain("[NOT_FOUND]");
    const missingEnvToDelete = await svc(["env", "delete", "qa", "--yes"]);
    expect(missingEnvToDelete.code).toBe(1);
    expect(missingEnvToDelete.stderr).toContain("[NOT_FOUND]");
    for (const [command, action] of [
      ["app", "get"],
      ["app", "delete"],
      ["env", "get"],
      ["env", "delete"],
    ]) {
      const unnamed = await svc([command!, action!]);
      expect(unnamed.code).toBe(1);
      expect(unnamed.stderr).toContain(`Usage: svc ${command} ${action} <name>`);
    }
  });

  it("a wrong API key is AUTH_FAILED with the remedy", async () => {
    const result = await svc(["deploy"], "not-the-key");
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("[AUTH_FAILED]");
    expect(result.stderr).toContain("Check that PLATFORM_API_KEY is set correctly, in .env or exported");
  });

  it("undeploy removes the environment's endpoints", async () => {
    const result = await svc(["undeploy", "--env", "staging", "--yes", "--json"]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).deleted).toHaveLength(2);
    const app = (await client.getApp("deploy-app"))!;
    expect(app.environments.find((e) => e.name === "staging")!.endpoints).toEqual([]);
    expect(await client.listEndpoints()).toHaveLength(2);
    const refused = await svc(["undeploy", "--env", "production"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("[CONFIRMATION_REQUIRED]");
  });
});

describe("svc deploy --preview", () => {
  it("serves the app from a temporary embedded platform until SIGINT, then removes it", async () => {
    const root = await mkdtemp(join(tmpdir(), "svc-preview-app-"));
    await cp(FIXTURE, root, { recursive: true });
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" };
    delete env.PLATFORM_API_URL;
    delete env.PLATFORM_API_KEY;
    const child = spawn(process.execPath, [BIN, "deploy", "--preview", "--json", "--root", root], { env, stdio: ["ignore", "pipe", "pipe"] });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    try {
      const summary = await new Promise<DeploySummary & { apiKey: string; dataDir: string; preview: boolean }>((resolve, reject) => {
        child.stdout.on("data", (chunk) => {
          stdout += chunk;
          try {
            resolve(JSON.parse(stdout));
          } catch {
            // not all of it yet
          }
        });
        void exited.then((code) => reject(new Error(`preview exited early (${code}): ${stderr}`)));
      });
      expect(summary.preview).toBe(true);
      expect(summary.platform).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const client = createPlatformClient({ url: summary.platform, apiKey: summary.apiKey });
      const hello = summary.endpoints.find((e) => e.name === "hello")!;
      expect((await client.runsync(hello.runsync!.replace(/\/runsync$/, ""), { name: "preview" })).output).toEqual({ greeting: "Hello, preview!" });

      child.kill("SIGINT");
      expect(await exited).toBe(0);
      expect(stderr).toContain("preview stopped");
      expect((await rejection(client.listApps())).code).toBe("PLATFORM_UNREACHABLE");
      await expect(readFile(join(summary.dataDir, "api-key"), "utf8")).rejects.toThrow();
    } finally {
      child.kill("SIGKILL");
      await rm(root, { recursive: true, force: true });
    }
  });
});
