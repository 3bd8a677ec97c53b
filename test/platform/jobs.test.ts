/**
 * Queue-based endpoints with real Python workers (runtime/python/svc): run, runsync, status,
 * stream, cancel, retry, purge, health, failures, timeouts, ttl, webhooks, files, cross-endpoint calls.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { api, buildFixtureArtifact, deploy, gqlOk, startTestPlatform, waitFinal, waitFor, type TestPlatform } from "./_support.ts";

let p: TestPlatform;
let ep: Record<string, { id: string; url: string }>;
let hooks: Server;
let hookUrl: string;
const received: Array<{ path: string; body: any }> = [];
let failFirstHook = 0;

const base = (name: string) => `/v2/${ep[name]!.id}`;

beforeAll(async () => {
  hooks = createServer((req, res) => {
    let text = "";
    req.on("data", (c) => (text += c));
    req.on("end", () => {
      received.push({ path: req.url ?? "", body: JSON.parse(text) });
      if (req.url === "/flaky" && failFirstHook-- > 0) res.statusCode = 500;
      res.end("ok");
    });
  });
  await new Promise<void>((r) => hooks.listen(0, "127.0.0.1", r));
  hookUrl = `http://127.0.0.1:${(hooks.address() as { port: number }).port}`;

  // The webhook receiver below listens on loopback, where the platform sends webhooks only when the operator allows it
  // (SVC_WEBHOOK_ALLOW; test/platform/webhook-targets.test.ts shows the refusal).
  p = await startTestPlatform({ runsyncRetentionMs: 60_000, webhookAllow: "127.0.0.1" });
  const artifact = await buildFixtureArtifact();
  const deployed = await deploy(p, artifact, [
    { name: "work", workersMax: 2, env: [{ key: "FROM_ENDPOINT", value: "yes" }] },
    { name: "awork", workersMax: 1 },
    { name: "count", workersMax: 1 },
    { name: "caller", workersMax: 1 },
    { name: "api", type: "LB", workersMax: 1 },
  ]);
  ep = deployed.endpoints;
});

afterAll(async () => {
  await p?.dispose();
  hooks?.close();
});

describe("queue-based jobs on Python workers", () => {
  it("runsync answers the completed job field by field", async () => {
    const r = await api(p, "POST", `${base("work")}/runsync`, { input: { op: "echo", value: { a: [1, 2] } } });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(["delayTime", "executionTime", "id", "output", "status", "workerId"]);
    expect(r.body).toMatchObject({ status: "COMPLETED", output: { echo: { a: [1, 2] } } });
    expect(r.body.workerId).toMatch(/^wk_/);
    expect(r.body.delayTime).toBeGreaterThanOrEqual(0);
    expect(r.body.executionTime).toBeGreaterThanOrEqual(0);
    const s = await api(p, "GET", `${base("work")}/status/${r.body.id}`);
    expect(s.body).toEqual(r.body);
  });

  it("run queues; status follows; async functions run", async () => {
    const r = await api(p, "POST", `${base("awork")}/run`, { input: { value: 5, seconds: 0.2 } });
    expect(r.body).toEqual({ id: expect.any(String), status: "IN_QUEUE" });
    const done = await waitFinal(p, ep.awork!.id, r.body.id);
    expect(done).toMatchObject({ id: r.body.id, status: "COMPLETED", output: { async: 5 } });
    expect(done.executionTime).toBeGreaterThanOrEqual(150);
  });

  it("an exception fails the job with type, message and traceback", async () => {
    const r = await api(p, "POST", `${base("work")}/runsync`, { input: { op: "fail", message: "kaboom" } });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("FAILED");
    expect(typeof r.body.error).toBe("string");
    const error = JSON.parse(r.body.error);
    expect(error).toMatchObject({ error_type: "ValueError", error_message: "kaboom" });
    expect(error.error_traceback).toMatch(/Traceback[\s\S]*app\/jobs\.py[\s\S]*ValueError: kaboom/);
    const returned = await api(p, "POST", `${base("work")}/runsync`, { input: { op: "error-dict", message: "told you" } });
    expect(returned.body).toMatchObject({ status: "FAILED", error: "told you" });
  });

  it("an input error answers HTTP 400 {id, status: FAILED, error: message}", async () => {
    const r = await api(p, "POST", `${base("work")}/runsync`, { input: { op: "invalid", message: "Invalid image URL" } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ id: expect.any(String), status: "FAILED", error: "Invalid image URL" });
    const wrongArgs = await api(p, "POST", `${base("work")}/runsync`, { input: { nope: 1 } });
    expect(wrongArgs.status).toBe(400);
  });

  it("runsync whose wait runs out answers {id, status} with 200; status-sync waits for the end", async () => {
    const r = await api(p, "POST", `${base("work")}/runsync?wait=1000`, { input: { op: "sleep", seconds: 2 } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ id: expect.any(String), status: expect.stringMatching(/IN_QUEUE|IN_PROGRESS/) });
    const s = await api(p, "GET", `${base("work")}/status-sync/${r.body.id}?wait=10000`);
    expect(s.body).toMatchObject({ id: r.body.id, status: "COMPLETED", output: { slept: 2 } });
  });

  it("streams generator chunks, and the output is the list of chunks", async () => {
    const r = await api(p, "POST", `${base("count")}/run`, { input: { n: 4, seconds: 0.15 } });
    const chunks: unknown[] = [];
    await waitFor(
      "the stream to end",
      async () => {
        const s = await api(p, "GET", `${base("count")}/stream/${r.body.id}`);
        expect(Object.keys(s.body).sort()).toEqual(["status", "stream"]);
        for (const c of s.body.stream) chunks.push(c.output);
        return s.body.status === "COMPLETED" && chunks.length === 4;
      },
      20_000,
      20,
    );
    expect(chunks).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }, { i: 3 }]);
    const done = await api(p, "GET", `${base("count")}/status/${r.body.id}`);
    expect(done.body.output).toEqual(chunks);
  });

  it("cancels a running job: CANCELLED, and the worker goes on with the next job", async () => {
    const r = await api(p, "POST", `${base("work")}/run`, { input: { op: "sleep", seconds: 30 } });
    await waitFor("the job to start", async () => (await api(p, "GET", `${base("work")}/status/${r.body.id}`)).body.status === "IN_PROGRESS");
    const c = await api(p, "POST", `${base("work")}/cancel/${r.body.id}`);
    expect(c.body).toEqual({ id: r.body.id, status: "CANCELLED" });
    expect((await api(p, "GET", `${base("work")}/status/${r.body.id}`)).body.status).toBe("CANCELLED");
    const next = await api(p, "POST", `${base("work")}/runsync`, { input: { op: "echo", value: "after" } });
    expect(next.body.output).toEqual({ echo: "after" });
  });

  it("times a job out after its executionTimeout (TIMED_OUT), then retry runs it again under the same id", async () => {
    const r = await api(p, "POST", `${base("work")}/run`, { input: { op: "sleep", seconds: 6 }, policy: { executionTimeout: 5000 } });
    const done = await waitFinal(p, ep.work!.id, r.body.id, 15_000);
    expect(done.status).toBe("TIMED_OUT");
    expect(done.error).toMatch(/timeout/i);
    const retry = await api(p, "POST", `${base("work")}/retry/${r.body.id}`, undefined);
    expect(retry.body).toEqual({ id: r.body.id, status: "IN_QUEUE" });
    const status = await api(p, "GET", `${base("work")}/status/${r.body.id}`);
    expect(status.body.error).toBeUndefined();
    await api(p, "POST", `${base("work")}/cancel/${r.body.id}`);
    const health = await api(p, "GET", `${base("work")}/health`);
    expect(health.body.jobs.retried).toBeGreaterThanOrEqual(1);
  }, 30_000);

  it("expires a job whose ttl ran out while queued: gone, /status 404", async () => {
    // The `count` endpoint has one worker: keep it busy, then queue a job with a short ttl.
    const busy = await api(p, "POST", `${base("count")}/run`, { input: { n: 1, seconds: 12 } });
    const short = await api(p, "POST", `${base("count")}/run`, { input: { n: 1 }, policy: { ttl: 10_000 } });
    expect((await api(p, "GET", `${base("count")}/status/${short.body.id}`)).status).toBe(200);
    await waitFor("the ttl to expire", async () => (await api(p, "GET", `${base("count")}/status/${short.body.id}`)).status === 404, 15_000, 200);
    await api(p, "POST", `${base("count")}/cancel/${busy.body.id}`);
  }, 25_000);

  it("purges queued jobs only; running ones go on", async () => {
    const running = await api(p, "POST", `${base("awork")}/run`, { input: { value: "r", seconds: 1.5 } });
    await waitFor("the job to start", async () => (await api(p, "GET", `${base("awork")}/status/${running.body.id}`)).body.status === "IN_PROGRESS");
    const queued = [];
    for (let i = 0; i < 3; i++) queued.push((await api(p, "POST", `${base("awork")}/run`, { input: { value: i }, policy: { lowPriority: true } })).body.id);
    const purge = await api(p, "POST", `${base("awork")}/purge-queue`);
    expect(purge.body).toEqual({ removed: 3, status: "completed" });
    for (const id of queued) expect((await api(p, "GET", `${base("awork")}/status/${id}`)).status).toBe(404);
    expect((await waitFinal(p, ep.awork!.id, running.body.id)).status).toBe("COMPLETED");
  });

  it("POSTs the final job to the webhook, retrying until it answers 200", async () => {
    failFirstHook = 1;
    const r = await api(p, "POST", `${base("work")}/run`, { input: { op: "echo", value: "hook" }, webhook: `${hookUrl}/flaky` });
    await waitFor("two webhook deliveries", () => received.filter((x) => x.body.id === r.body.id).length >= 2, 10_000);
    const deliveries = received.filter((x) => x.body.id === r.body.id);
    expect(deliveries).toHaveLength(2);
    expect(deliveries[1]!.body).toMatchObject({ id: r.body.id, status: "COMPLETED", output: { echo: "hook" }, workerId: expect.any(String) });
  });

  it("gives workers the contract's env plus the endpoint's env", async () => {
    const get = async (name: string) => (await api(p, "POST", `${base("work")}/runsync`, { input: { op: "env", value: name } })).body.output.value;
    expect(await get("FROM_ENDPOINT")).toBe("yes");
    expect(await get("FIXTURE_ENV")).toBe("work"); // from the manifest
    expect(await get("SVC_ENDPOINT_ID")).toBe(ep.work!.id);
    expect(await get("SVC_ENDPOINT_NAME")).toBe("work");
    expect(await get("PLATFORM_API_URL")).toBe(p.url);
    expect(await get("PYTHONPATH")).toMatch(/^([^:]+):\1\/site-packages$/); // the build (in the sandbox: /app), then its site-packages
  });

  it("serves output files to API key holders", async () => {
    const r = await api(p, "POST", `${base("work")}/runsync`, { input: { op: "file", value: "file body", name: "result.txt" } });
    const url: string = r.body.output.url;
    expect(url).toMatch(new RegExp(`^${p.url}/v2/files/f_\\w+/result\\.txt$`));
    const noKey = await fetch(url);
    expect(noKey.status).toBe(401);
    const withKey = await fetch(url, { headers: { authorization: `Bearer ${p.apiKey}` } });
    expect(withKey.status).toBe(200);
    expect(withKey.headers.get("content-type")).toBe("text/plain");
    expect(await withKey.text()).toBe("file body");
    // expired → 404
    const id = url.split("/").at(-2)!;
    p.context.store.db.prepare("UPDATE files SET expires_at = 0 WHERE id = ?").run(id);
    expect((await fetch(url, { headers: { authorization: p.apiKey } })).status).toBe(404);
  });

  it("calls another endpoint from a worker (QB runsync and LB execute through the platform)", async () => {
    const r = await api(p, "POST", `${base("caller")}/runsync`, { input: { value: "x" } });
    expect(r.body, JSON.stringify(r.body)).toMatchObject({ status: "COMPLETED", output: { via: { echo: "x" }, lb: { sum: 5 } } });
  });

  it("reports worker states in /health and keeps worker logs readable through GraphQL", async () => {
    const h = await api(p, "GET", `${base("work")}/health`);
    expect(h.body.jobs.completed).toBeGreaterThan(3);
    expect(h.body.jobs.failed).toBeGreaterThan(1);
    expect(h.body.workers.ready).toBeGreaterThanOrEqual(1);
    const logs = await gqlOk<{ workerLogs: string[] }>(p, "query($e: String!) { workerLogs(endpointId: $e, limit: 500) }", { e: ep.work!.id });
    expect(logs.workerLogs.some((l) => /serving queue-based endpoint work/.test(l))).toBe(true);
  });

  it("deleting an endpoint stops its workers", async () => {
    // a worker of its own, whatever the tests before left: theirs may have idled out (5 s) on a busy machine
    expect((await api(p, "POST", `${base("awork")}/runsync`, { input: {} })).body.status).toBe("COMPLETED");
    const workers = p.context.supervisor.forEndpoint(ep.awork!.id);
    expect(workers.length).toBeGreaterThan(0);
    await gqlOk(p, "mutation($id: String!) { deleteEndpoint(id: $id) }", { id: ep.awork!.id });
    await waitFor("the workers to exit", () => workers.every((w) => w.exited), 10_000);
    expect((await api(p, "POST", `${base("awork")}/run`, { input: {} })).status).toBe(404);
  });
});
