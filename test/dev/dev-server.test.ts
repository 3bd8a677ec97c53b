/**
 * svc:dev-server against a REAL embedded platform (in-process, temp data dir, loopback) and real
 * Python workers, on fixtures/dev-app: lazy provisioning, runsync, LB proxy, docs, reload,
 * auto-provision with the resource cache, a wrong key, and the clean-up on stop.
 */
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import type { SvcError } from "../../core/errors.ts";
import { createLogger } from "../../core/logger.ts";
import { readResourceCache } from "../../dev/provisioning/resource-cache.ts";
import { bwrapUsable } from "../../platform/workers/sandbox.ts";
import { startDevServer, type DevServer } from "../../dev/index.ts";
import { copyDevApp, removeDir, startTestPlatform, type TestPlatform } from "./_dev-platform.ts";

const liveNames = async (client: PlatformClient) =>
  (await client.listEndpoints())
    .filter((e) => e.name.startsWith("live-"))
    .map((e) => e.name)
    .sort();

const post = (url: string, body: unknown) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });

describe("svc run (dev server) on the embedded platform", { timeout: 120_000 }, () => {
  let platform: TestPlatform;
  let client: PlatformClient;
  const lines: string[] = [];
  const logger = createLogger("info", (line) => lines.push(line));
  const roots: string[] = [];
  const app = async (): Promise<string> => {
    const root = await copyDevApp();
    roots.push(root);
    return root;
  };

  beforeAll(async () => {
    platform = await startTestPlatform();
    client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
  });
  afterAll(async () => {
    await platform?.close();
    for (const root of roots) await removeDir(root);
  });

  describe("lazy mode", () => {
    let root: string;
    let server: DevServer;

    beforeAll(async () => {
      root = await app();
      server = await startDevServer({ root, client, port: 0, logger, debounceMs: 100 });
    });
    afterAll(async () => {
      await server?.close();
    });

    it("answers the health route with every endpoint lazy and nothing deployed yet", async () => {
      const res = await fetch(`${server.url}/`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { status: string; app: string; platform: string; endpoints: Array<{ name: string; state: string }> };
      expect(body).toMatchObject({ status: "ok", app: "dev-app", platform: platform.url });
      expect(body.endpoints.map((e) => [e.name, e.state])).toEqual([
        ["api", "lazy"],
        ["hello", "lazy"],
        ["slow", "lazy"],
      ]);
      expect(await liveNames(client)).toEqual([]);
    });

    it("deploys live-hello on the first runsync and answers the function's output", async () => {
      const res = await post(`${server.url}/hello/runsync`, { input: { name: "Ada" } });
      expect(res.status).toBe(200);
      const job = (await res.json()) as Record<string, unknown>;
      expect(job).toMatchObject({ status: "COMPLETED", output: { greeting: "Hello, Ada!" } });
      expect(typeof job.id).toBe("string");
      expect(typeof job.executionTime).toBe("number");
      // Only the endpoint that was called exists (lazy), under the live- prefix.
      expect(await liveNames(client)).toEqual(["live-hello"]);
      const health = (await (await fetch(`${server.url}/`)).json()) as { endpoints: Array<{ name: string; state: string; url?: string }> };
      expect(health.endpoints.find((e) => e.name === "hello")).toMatchObject({ state: "provisioned", url: expect.stringContaining("/v2/") });
      expect(health.endpoints.find((e) => e.name === "api")).toMatchObject({ state: "lazy" });
      // A bare body works too, through the dotted module path.
      const bare = await post(`${server.url}/workers.hello/runsync`, { name: "Bob" });
      expect(await bare.json()).toMatchObject({ output: { greeting: "Hello, Bob!" } });
    });

    it("answers 400 for input the function rejects and for bad JSON, 404 for unknown routes", async () => {
      const rejected = await post(`${server.url}/hello/runsync`, { name: "" });
      expect(rejected.status).toBe(400);
      expect(await rejected.json()).toMatchObject({ status: "FAILED" });
      expect((await post(`${server.url}/hello/runsync`, "{not json")).status).toBe(400);
      const unknown = await post(`${server.url}/nope/runsync`, {});
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toMatchObject({ code: "UNKNOWN_MODULE" });
    });

    it("a typed input that does not match the signature: 400 and INPUT_INVALID listing every bad field, the same body the platform's runsync gives", async () => {
      const res = await post(`${server.url}/hello/runsync`, { name: 3, colour: "red" });
      expect(res.status).toBe(400);
      const job = (await res.json()) as { status: string; error: string };
      expect(job.status).toBe("FAILED");
      expect(job.error).toMatch(/^INPUT_INVALID: the input of hello\(\) does not match its signature \(2 fields\):/);
      expect(job.error).toContain("  name: expected str, got 3 (integer)");
      expect(job.error).toContain('  colour: unknown field (hello() takes name), got "red" (string)');
      const health = (await (await fetch(`${server.url}/`)).json()) as { endpoints: Array<{ name: string; url?: string }> };
      const direct = await fetch(`${health.endpoints.find((e) => e.name === "hello")!.url}/runsync`, {
        method: "POST",
        headers: { authorization: `Bearer ${platform.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ input: { name: 3, colour: "red" } }),
      });
      expect(direct.status).toBe(400);
      expect(((await direct.json()) as { error: string }).error).toBe(job.error);
    });

    it("proxies the load-balanced routes (GET and POST) to live-api", async () => {
      const get = await fetch(`${server.url}/api/ping-me`);
      expect(get.status).toBe(200);
      expect(await get.json()).toEqual({ ok: true });
      const echo = await post(`${server.url}/api/echo`, { text: "hi" });
      expect(echo.status).toBe(200);
      expect(await echo.json()).toEqual({ echo: "hi" });
      expect(await liveNames(client)).toEqual(["live-api", "live-hello"]);
    });

    it("answers 202 with the job id and a status URL when the job outlives the wait; the status URL gives the result", async () => {
      const res = await post(`${server.url}/slow/runsync?wait=300`, { seconds: 2.5 });
      expect(res.status).toBe(202);
      const pending = (await res.json()) as { id: string; status: string; statusUrl: string };
      expect(["IN_QUEUE", "IN_PROGRESS"]).toContain(pending.status);
      expect(pending.statusUrl).toBe(`${server.url}/slow/status/${pending.id}`);
      expect(res.headers.get("location")).toBe(pending.statusUrl);
      let job: { id: string; status: string; output?: unknown } = pending;
      for (let i = 0; i < 100 && job.status !== "COMPLETED"; i++) {
        await new Promise((r) => setTimeout(r, 200));
        const poll = await fetch(pending.statusUrl);
        expect(poll.status).toBe(200);
        job = (await poll.json()) as typeof job;
      }
      expect(job).toMatchObject({ id: pending.id, status: "COMPLETED", output: { slept: 2.5 } });
    });

    it("serves /docs (Swagger UI, local assets) and /openapi.json with one operation per function and route", async () => {
      const docs = await fetch(`${server.url}/docs`);
      expect(docs.headers.get("content-type")).toContain("text/html");
      expect(await docs.text()).toContain("swagger-ui-bundle.js");
      expect((await fetch(`${server.url}/docs/swagger-ui.css`)).status).toBe(200);
      const spec = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { operationId: string }>> };
      const operations = Object.values(spec.paths).flatMap((methods) => Object.values(methods).map((op) => op.operationId));
      expect(operations).toEqual(expect.arrayContaining(["hello_runsync", "ping_me_get", "echo_post"]));
    });

    it("reloads on a Python edit: the next call returns the new output, on the same endpoint, from its warm spare", async () => {
      const before = server.provisioner.remoteOf("hello")!.id;
      const { supervisor } = platform.context;
      // with bwrap: the endpoint's warm spare (docs/platform.md), started before the save, runs the new build
      let spare: number | undefined;
      for (const deadline = Date.now() + 30_000; (await bwrapUsable()) && !spare && Date.now() < deadline; ) {
        spare = supervisor.local.spares.held(before)?.pid;
        if (!spare) await new Promise((r) => setTimeout(r, 50));
      }
      const file = join(root, "workers/hello.py");
      const urlsApart = vi.spyOn(client, "setBuildEndpointUrls");
      const reloaded = server.nextReload();
      await writeFile(file, (await readFile(file, "utf8")).replace('GREETING = "Hello"', 'GREETING = "Howdy"'));
      const report = await reloaded;
      expect(report).toMatchObject({ ok: true, files: ["workers/hello.py"], uploadSkipped: false, parsedFiles: 1 });
      // the new build was made with its endpoints' URLs in its manifest: no request of their own before its worker starts
      expect(platform.context.store.builds.get(report.buildId!)?.manifest.urls).toMatchObject({ hello: server.provisioner.remoteOf("hello")!.url });
      expect(urlsApart).not.toHaveBeenCalled();
      urlsApart.mockRestore();
      expect(report.updated).toContain("hello");
      expect(lines.some((line) => /reloaded in .*updated .*live-hello/.test(line))).toBe(true);
      const res = await post(`${server.url}/hello/runsync`, { name: "Ada" });
      expect(await res.json()).toMatchObject({ status: "COMPLETED", output: { greeting: "Howdy, Ada!" } });
      expect(server.provisioner.remoteOf("hello")!.id).toBe(before);
      if ((await bwrapUsable()) && spare) expect(supervisor.forEndpoint(before).find((w) => !w.exited && !w.stopping)?.pid).toBe(spare);
      else expect(await bwrapUsable()).toBe(false); // a sandbox and no spare: the warm path is broken
    });

    it("skips the upload when a save leaves the artifact unchanged, and never reloads for output folders", async () => {
      const file = join(root, "workers/hello.py");
      const reloaded = server.nextReload();
      await writeFile(file, await readFile(file, "utf8"));
      // Same bytes: chokidar may not even report it; force one reload to check the skip.
      const report =
        (await Promise.race([reloaded, new Promise<undefined>((r) => setTimeout(() => r(undefined), 1000))])) ?? (await server.reload(["workers/hello.py"]));
      expect(report).toMatchObject({ ok: true, uploadSkipped: true, updated: [] });

      let reloads = 0;
      void server.nextReload().then(() => reloads++);
      await writeFile(join(root, ".svc", "scratch.txt"), "x");
      await writeFile(join(root, ".platform", "scratch.txt"), "x");
      await new Promise((r) => setTimeout(r, 600));
      expect(reloads).toBe(0);
    });

    it("runs one reload at a time and batches what arrives meanwhile into the next one", async () => {
      const [a, b, c] = await Promise.all([server.reload(["workers/hello.py"]), server.reload(["workers/api.py"]), server.reload(["workers/slow.py"])]);
      expect(a.files).toEqual(["workers/hello.py"]);
      expect(b).toBe(c);
      expect(b.files).toEqual(["workers/api.py", "workers/slow.py"]);
    });

    it("keeps serving the previous build when an edit breaks the syntax", async () => {
      const file = join(root, "workers/hello.py");
      const good = await readFile(file, "utf8");
      const failed = server.nextReload();
      await writeFile(file, `${good}\ndef broken(:\n`);
      expect(await failed).toMatchObject({ ok: false, error: { code: "PYTHON_SYNTAX" } });
      expect(((await (await fetch(`${server.url}/`)).json()) as { status: string }).status).toBe("degraded");
      const res = await post(`${server.url}/hello/runsync`, { name: "Ada" });
      expect(await res.json()).toMatchObject({ output: { greeting: "Howdy, Ada!" } });
      const fixed = server.nextReload();
      await writeFile(file, good);
      expect(await fixed).toMatchObject({ ok: true });
    });

    it("deletes its live- endpoints and their cache entries when it stops", async () => {
      expect(Object.keys((await readResourceCache(root)).resources)).toHaveLength(3);
      await server.close();
      expect(await liveNames(client)).toEqual([]);
      expect(Object.keys((await readResourceCache(root)).resources)).toEqual([]);
      expect((await fetch(`${server.url}/`).catch((error: Error) => error)) instanceof Error).toBe(true);
    });
  });

  it("--auto-provision deploys every endpoint at startup and a restart reuses them from the cache (same ids)", async () => {
    const root = await app();
    const first = await startDevServer({ root, client, port: 0, logger, autoProvision: true, reload: false });
    let second: DevServer | undefined;
    try {
      expect(first.provisioner.status().map((s) => s.state)).toEqual(["provisioned", "provisioned", "provisioned"]);
      expect(await liveNames(client)).toEqual(["live-api", "live-hello", "live-slow"]);
      const ids = first.provisioner.status().map((s) => s.id);
      const cache = await readResourceCache(root);
      expect(
        Object.values(cache.resources)
          .map((r) => r.id)
          .sort(),
      ).toEqual([...ids].sort());
      // A run that ends without clean-up (killed): its endpoints stay, recorded in the cache.
      await first.close({ keepEndpoints: true });

      const buildIds = first.provisioner.status().map((s) => s.buildId);
      lines.length = 0;
      second = await startDevServer({ root, client, port: 0, logger, autoProvision: true, reload: false });
      expect(second.provisioner.status().map((s) => s.id)).toEqual(ids);
      // Nothing changed: the same build, no upload, no endpoint saved again (issue 19).
      expect(second.provisioner.status().map((s) => s.buildId)).toEqual(buildIds);
      expect(lines.join("\n")).toContain("unchanged since the last svc run: reusing its build");
      expect(lines.join("\n")).toContain("reusing cached live-api, live-hello, live-slow");
      expect(lines.filter((line) => /updating|updated|deploying/.test(line))).toEqual([]);
      expect(await liveNames(client)).toEqual(["live-api", "live-hello", "live-slow"]);
      const res = await post(`${second.url}/hello/runsync`, { name: "again" });
      expect(await res.json()).toMatchObject({ output: { greeting: "Hello, again!" } });
    } finally {
      await first.close();
      await second?.close();
    }
    expect(await liveNames(client)).toEqual([]);
  });

  it("lazy mode: a function calling other endpoints' functions deploys them on demand and the calls succeed", async () => {
    const root = await app();
    await writeFile(
      join(root, "workers", "caller.py"),
      [
        "from svc import Endpoint",
        "from workers.api import echo",
        "from workers.hello import hello",
        "",
        "",
        '@Endpoint(name="caller", cpu="cpu3c-2-4", workers=(0, 1), idle_timeout=30)',
        "def call_others(name: str) -> dict:",
        '    return {"qb": hello(name=name), "lb": echo(text=name)}',
        "",
      ].join("\n"),
    );
    const server = await startDevServer({ root, client, port: 0, logger, reload: false });
    try {
      expect(await liveNames(client)).toEqual([]);
      const res = await post(`${server.url}/caller/runsync`, { name: "Ada" });
      const job = (await res.json()) as Record<string, unknown>;
      expect(job, JSON.stringify(job)).toMatchObject({ status: "COMPLETED", output: { qb: { greeting: "Hello, Ada!" }, lb: { echo: "Ada" } } });
      // hello and api were deployed by the calls; slow was not called and stays lazy
      expect(await liveNames(client)).toEqual(["live-api", "live-caller", "live-hello"]);
      expect(server.provisioner.status().find((s) => s.name === "slow")?.state).toBe("lazy");
      // the proxy route lends no key: a caller must send one
      const anonymous = await post(`${server.url}/_svc/live/hello/runsync`, { input: { name: "x" } });
      expect(anonymous.status).toBe(401);
    } finally {
      await server.close();
    }
    expect(await liveNames(client)).toEqual([]);
  });

  it("refuses to start with a wrong API key (AUTH_FAILED) and deploys nothing", async () => {
    const root = await app();
    const wrong = createPlatformClient({ url: platform.url, apiKey: "wrong-key" });
    const error = (await startDevServer({ root, client: wrong, port: 0, logger }).catch((e: unknown) => e)) as SvcError;
    expect(error.code).toBe("AUTH_FAILED");
    expect(error.message).toContain("PLATFORM_API_KEY");
    // The key is checked first: nothing was built, nothing deployed.
    expect(existsSync(join(root, ".svc"))).toBe(false);
    expect(await liveNames(client)).toEqual([]);
  });
});
