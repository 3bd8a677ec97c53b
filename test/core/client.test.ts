/**
 * core/client against a test double of the platform (test/_support/fake-platform.ts: GraphQL is
 * executed against the real schema file), plus the environment rules as a pure function.
 */
import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createPlatformClient, planEnvironment, resolvePlatform, type PlatformClient } from "../../core/client/index.ts";
import { SvcError } from "../../core/errors.ts";
import { startFakePlatform, type FakePlatform } from "../_support/fake-platform.ts";
import { rejection } from "../_support/rejection.ts";

describe("planEnvironment (deploy environment rules)", () => {
  it("creates the app and `production` when there is no app", () => {
    expect(planEnvironment("a", null)).toEqual({ action: "create-app", environment: "production" });
  });
  it("creates the app with the --env environment", () => {
    expect(planEnvironment("a", undefined, "staging")).toEqual({ action: "create-app", environment: "staging" });
  });
  it("creates an unknown --env", () => {
    expect(planEnvironment("a", { environments: [{ name: "production" }] }, "staging")).toEqual({ action: "create-environment", environment: "staging" });
  });
  it("uses the only environment when --env is absent", () => {
    expect(planEnvironment("a", { environments: [{ name: "staging" }] })).toEqual({ action: "use", environment: "staging" });
  });
  it("uses a named existing environment among several", () => {
    expect(planEnvironment("a", { environments: [{ name: "production" }, { name: "staging" }] }, "staging")).toEqual({ action: "use", environment: "staging" });
  });
  it("refuses several environments without --env: ENVIRONMENT_AMBIGUOUS naming them", () => {
    let error: SvcError | undefined;
    try {
      planEnvironment("a", { environments: [{ name: "production" }, { name: "staging" }] });
    } catch (e) {
      error = e as SvcError;
    }
    expect(error?.code).toBe("ENVIRONMENT_AMBIGUOUS");
    expect(error?.message).toContain("production, staging");
    expect(error?.remedy).toContain("--env");
  });
});

describe("resolvePlatform", () => {
  it("PLATFORM_API_URL without PLATFORM_API_KEY is AUTH_MISSING with the remedy", async () => {
    const error = await rejection(resolvePlatform({ PLATFORM_API_URL: "http://x.test" }));
    expect(error.code).toBe("AUTH_MISSING");
    expect(error.message).toMatch(/PLATFORM_API_KEY.*\.env or exported/s);
  });
  it("uses PLATFORM_API_URL + PLATFORM_API_KEY, not the embedded platform", async () => {
    let started = 0;
    const startEmbedded = async () => (started++, { url: "http://127.0.0.1:1", apiKey: "embedded" });
    expect(await resolvePlatform({ PLATFORM_API_URL: "http://x.test/ ", PLATFORM_API_KEY: "k" }, { startEmbedded })).toEqual({
      url: "http://x.test",
      apiKey: "k",
      embedded: false,
      keySource: "user",
    });
    expect(started).toBe(0);
  });
  it("no PLATFORM_API_URL: the embedded platform, with the user's key when one is set, else its own", async () => {
    const startEmbedded = async () => ({ url: "http://127.0.0.1:8787/", apiKey: "embedded-key" });
    expect(await resolvePlatform({ PLATFORM_API_KEY: " mine " }, { startEmbedded })).toEqual({
      url: "http://127.0.0.1:8787",
      apiKey: "mine",
      embedded: true,
      keySource: "user",
    });
    expect(await resolvePlatform({ PLATFORM_API_KEY: "", PLATFORM_API_URL: " " }, { startEmbedded })).toEqual({
      url: "http://127.0.0.1:8787",
      apiKey: "embedded-key",
      embedded: true,
      keySource: "embedded",
    });
  });
  it("no PLATFORM_API_URL and no embedded platform to start is PLATFORM_NOT_CONFIGURED (core starts nothing itself)", async () => {
    const error = await rejection(resolvePlatform({ PLATFORM_API_KEY: "k" }));
    expect(error.code).toBe("PLATFORM_NOT_CONFIGURED");
    expect(error.remedy).toContain("PLATFORM_API_URL");
  });
  it.each(["127.0.0.1:8787", "localhost:8787", "ftp://host", "http://", "http://127.0.0.1:99999"])(
    "PLATFORM_API_URL=%s is PLATFORM_URL_INVALID naming it",
    async (url) => {
      const error = await rejection(resolvePlatform({ PLATFORM_API_URL: url, PLATFORM_API_KEY: "k" }));
      expect(error.code).toBe("PLATFORM_URL_INVALID");
      expect(error.message).toContain(`"${url}"`);
      expect(error.remedy).toMatch(/http:\/\//);
    },
  );
  it("suggests the scheme for an address without one", async () => {
    const error = await rejection(resolvePlatform({ PLATFORM_API_URL: "127.0.0.1:8787", PLATFORM_API_KEY: "k" }));
    expect(error.remedy).toContain("http://127.0.0.1:8787");
  });
  it("suggests a generic address, not the scheme glued to the value, when the value is no host", async () => {
    const error = await rejection(resolvePlatform({ PLATFORM_API_URL: "not a url", PLATFORM_API_KEY: "k" }));
    expect(error.remedy).not.toContain("http://not a url");
    expect(error.remedy).toContain("http://127.0.0.1:8787");
  });
});

describe("createPlatformClient against the test double", () => {
  let fake: FakePlatform;
  let client: PlatformClient;
  let dir: string;

  beforeAll(async () => {
    fake = await startFakePlatform();
    client = createPlatformClient({ url: `${fake.url}/`, apiKey: fake.apiKey });
    dir = await mkdtemp(join(tmpdir(), "svc-client-"));
  });
  afterAll(async () => {
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    fake.queue.pendingPolls = 0;
    fake.queue.statusSync = true;
  });

  it("a wrong API key is AUTH_FAILED with the spec's remedy (GraphQL and REST)", async () => {
    const bad = createPlatformClient({ url: fake.url, apiKey: "wrong" });
    const gqlError = await rejection(bad.listApps());
    expect(gqlError).toBeInstanceOf(SvcError);
    expect(gqlError.code).toBe("AUTH_FAILED");
    expect(gqlError.remedy).toBe("Check that PLATFORM_API_KEY is set correctly, in .env or exported in your shell.");
    const restError = await rejection(bad.runsync("ep_x", {}));
    expect(restError.code).toBe("AUTH_FAILED");
  });

  it("nobody listening is PLATFORM_UNREACHABLE", async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const p = (server.address() as { port: number }).port;
        server.close(() => resolve(p));
      });
    });
    const offline = createPlatformClient({ url: `http://127.0.0.1:${port}`, apiKey: "k" });
    expect((await rejection(offline.listApps())).code).toBe("PLATFORM_UNREACHABLE");
    expect((await rejection(offline.runsync("ep_x", {}))).code).toBe("PLATFORM_UNREACHABLE");
  });

  it("GraphQL errors are PLATFORM_ERROR carrying the platform's message", async () => {
    await client.createApp("dup");
    const error = await rejection(client.createApp("dup"));
    expect(error.code).toBe("PLATFORM_ERROR");
    expect(error.message).toContain('app "dup" already exists');
    expect(error.message).toContain("createApp");
  });

  it("apps and environments: create, get by name, list, delete", async () => {
    const app = await client.createApp("shop");
    expect(await client.getApp("nope")).toBeNull();
    const env = await client.createEnvironment(app.id, "production");
    expect((await client.getEnvironment(app.id, "production"))?.id).toBe(env.id);
    expect((await client.listEnvironments("shop")).map((e) => e.name)).toEqual(["production"]);
    expect((await client.listApps()).map((a) => a.name)).toContain("shop");
    expect(await client.deleteEnvironment(env.id)).toBe(true);
    expect(await client.getEnvironment(app.id, "production")).toBeNull();
    expect(await client.deleteApp(app.id)).toBe(true);
    expect(await client.getApp("shop")).toBeNull();
  });

  it("uploadArtifact streams the gzip once, then skips the PUT for the same sha256", async () => {
    const app = await client.createApp("uploads");
    const bytes = gzipSync(Buffer.from("hello artifact"));
    const path = join(dir, "artifact.tar.gz");
    await writeFile(path, bytes);
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    const manifest = { version: 1, app: "uploads" };

    const first = await client.uploadArtifact(app.id, { path, sha256, size: bytes.length }, manifest);
    expect(first.skipped).toBe(false);
    expect(fake.puts).toHaveLength(1);
    expect(fake.puts[0]).toEqual({ contentType: "application/gzip", sha256, size: bytes.length });
    expect((await client.getBuild(first.buildId))?.manifest).toEqual(manifest);

    const second = await client.uploadArtifact(app.id, { path, sha256, size: bytes.length }, manifest);
    expect(second.skipped).toBe(true);
    expect(fake.puts).toHaveLength(1);
    expect(second.buildId).toBeTruthy();

    await client.setBuildEndpointUrls(second.buildId, { hello: "http://x/v2/ep_1" });
    expect((await client.getBuild(second.buildId))?.manifest.urls).toEqual({ hello: "http://x/v2/ep_1" });
  });

  it("saveEndpoint creates, with an id updates in place; deleteEndpoint removes", async () => {
    const created = await client.saveEndpoint({
      name: "w",
      type: "QB",
      instanceIds: ["cpu3c-2-4"],
      template: { imageName: "img" },
      env: [{ key: "A", value: "1" }],
    });
    expect(created.url).toBe(`${fake.url}/v2/${created.id}`);
    const updated = await client.saveEndpoint({ id: created.id, name: "w", workersMax: 5 });
    expect(updated.id).toBe(created.id);
    expect(updated.workersMax).toBe(5);
    expect((await client.listEndpoints()).filter((e) => e.name === "w")).toHaveLength(1);
    expect(await client.deleteEndpoint(created.id)).toBe(true);
    expect((await client.listEndpoints()).some((e) => e.id === created.id)).toBe(false);
  });

  it("runsync answers the output directly when the job completes in time", async () => {
    const ep = await client.saveEndpoint({ name: "q1" });
    fake.queue.handler = (_id, input) => ({ greeting: `Hello, ${input.name}!` });
    const job = await client.runsync(ep.id, { name: "Ada" });
    expect(job.status).toBe("COMPLETED");
    expect(job.output).toEqual({ greeting: "Hello, Ada!" });
  });

  it("runsync follows a non-final answer with status-sync until final, keeping the job id", async () => {
    const ep = await client.saveEndpoint({ name: "q2" });
    fake.queue.handler = () => "done";
    fake.queue.pendingPolls = 2;
    const pending: string[] = [];
    fake.log.length = 0;
    const job = await client.runsync(ep.url, { x: 1 }, { onPending: (j) => pending.push(`${j.id}:${j.status}`) });
    expect(job.status).toBe("COMPLETED");
    expect(job.output).toBe("done");
    expect(pending).toHaveLength(3);
    expect(new Set(pending.map((p) => p.split(":")[0]))).toEqual(new Set([job.id]));
    expect(fake.log.filter((line) => line.includes("/status-sync/"))).toHaveLength(3);
  });

  it("runsync falls back to /status polling where there is no status-sync route", async () => {
    const ep = await client.saveEndpoint({ name: "q3" });
    fake.queue.pendingPolls = 1;
    fake.queue.statusSync = false;
    fake.log.length = 0;
    const job = await client.runsync(ep.id, {});
    expect(job.status).toBe("COMPLETED");
    expect(fake.log.some((line) => line.includes(`/v2/${ep.id}/status/${job.id}`))).toBe(true);
  });

  it("runsync with a timeout that runs out answers the non-final job, id included", async () => {
    const ep = await client.saveEndpoint({ name: "q4" });
    fake.queue.pendingPolls = 1000;
    fake.queue.statusSync = false;
    const job = await client.runsync(ep.id, {}, { timeoutMs: 1500 });
    expect(["IN_QUEUE", "IN_PROGRESS"]).toContain(job.status);
    expect(fake.state.jobs.has(job.id)).toBe(true);
    expect((await client.cancel(ep.id, job.id)).status).toBe("CANCELLED");
    expect((await client.status(ep.id, job.id)).status).toBe("CANCELLED");
  });

  it("run answers IN_QUEUE with an id; status of an unknown job is NOT_FOUND", async () => {
    const ep = await client.saveEndpoint({ name: "q5" });
    const job = await client.run(ep.id, { a: 1 });
    expect(job.status).toBe("IN_QUEUE");
    expect(job.id).toBeTruthy();
    expect((await rejection(client.status(ep.id, "nope"))).code).toBe("NOT_FOUND");
  });

  it("lbRequest sends method, path and JSON body to the endpoint URL", async () => {
    const ep = await client.saveEndpoint({ name: "lb", type: "LB" });
    const response = await client.lbRequest(ep.url, "post", "/echo", { text: "hi" });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ method: "POST", path: "/echo", body: { text: "hi" } });
    const get = await client.lbRequest(ep.url, "GET", "health");
    expect(get.body).toEqual({ method: "GET", path: "/health", body: null });
  });
});
