/** Workers: autoscaling up and back to workersMin, load-balanced routing, dead workers, outdated workers. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "undici";
import {
  api,
  buildFixtureArtifact,
  deploy,
  gqlOk,
  saveEndpoint,
  startTestPlatform,
  waitFinal,
  waitFor,
  type BuiltArtifact,
  type TestPlatform,
} from "./_support.ts";

let p: TestPlatform;
let artifact: BuiltArtifact;
let buildId: string;
let ep: Record<string, { id: string; url: string }>;

beforeAll(async () => {
  p = await startTestPlatform({ lbReadyWaitMs: 15_000 });
  artifact = await buildFixtureArtifact();
  const deployed = await deploy(p, artifact, [
    { name: "work", workersMin: 1, workersMax: 3, idleTimeout: 1, scalerValue: 1 },
    { name: "api", type: "LB", workersMin: 0, workersMax: 2, idleTimeout: 2, scalerValue: 1 },
  ]);
  ep = deployed.endpoints;
  buildId = deployed.buildId;
});

afterAll(async () => {
  await p?.dispose();
});

const live = (endpointId: string) => p.context.supervisor.forEndpoint(endpointId).filter((w) => !w.stopping && !w.exited);
const health = async (endpointId: string) => (await api(p, "GET", `/v2/${endpointId}/health`)).body;

describe("autoscaling", () => {
  it("keeps workersMin warm, scales up when jobs wait, and back down after idleTimeout", async () => {
    await waitFor("the warm worker", async () => (await health(ep.work!.id)).workers.idle === 1, 15_000);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await api(p, "POST", `/v2/${ep.work!.id}/run`, { input: { op: "sleep", seconds: 2 } })).body.id);
    await waitFor("3 workers", () => live(ep.work!.id).length === 3, 10_000);
    const during = await health(ep.work!.id);
    expect(during.workers.running + during.workers.initializing + during.workers.idle).toBe(3);
    for (const id of ids) expect((await waitFinal(p, ep.work!.id, id, 20_000)).status).toBe("COMPLETED");
    await waitFor("scale back to workersMin", () => live(ep.work!.id).length === 1, 10_000);
    expect(p.context.supervisor.forEndpoint(ep.work!.id).every((w) => !w.unhealthy)).toBe(true);
  }, 40_000);

  it("lowPriority jobs do not scale up", async () => {
    await waitFor("one warm worker", () => live(ep.work!.id).length === 1 && live(ep.work!.id)[0]!.ready, 10_000);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await api(p, "POST", `/v2/${ep.work!.id}/run`, { input: { op: "sleep", seconds: 0.7 }, policy: { lowPriority: true } })).body.id);
    await new Promise((r) => setTimeout(r, 1500));
    expect(live(ep.work!.id).length).toBe(1);
    for (const id of ids) await waitFinal(p, ep.work!.id, id, 10_000);
  }, 20_000);

  it("starts the first worker at once when a job arrives at an endpoint with none", async () => {
    const cold = await saveEndpoint(p, buildId, { name: "awork", workersMin: 0, workersMax: 1 });
    const t0 = Date.now();
    const r = await api(p, "POST", `/v2/${cold.id}/runsync`, { input: { value: 1 } });
    expect(r.body.output).toEqual({ async: 1 });
    expect(Date.now() - t0).toBeLessThan(3000); // no 4 s QUEUE_DELAY wait before the first worker
  });
});

describe("load-balanced endpoints", () => {
  it("proxies GET and POST by path prefix and by Host, starting a worker on demand", async () => {
    const get = await api(p, "GET", `/lb/${ep.api!.id}/hello?name=svc`);
    expect(get).toEqual({ status: 200, body: { hello: "svc" } });
    const post = await api(p, "POST", `/lb/${ep.api!.id}/add`, { a: 20, b: 22 });
    expect(post).toEqual({ status: 200, body: { sum: 42 } });
    const byHost = await request(`${p.url}/hello?name=host`, {
      headers: { host: `${ep.api!.id}.localhost:${new URL(p.url).port}`, authorization: `Bearer ${p.apiKey}` },
    });
    expect(byHost.statusCode).toBe(200);
    expect(await byHost.body.json()).toEqual({ hello: "host" });
    const missing = await api(p, "GET", `/lb/${ep.api!.id}/nope`);
    expect(missing.status).toBe(404);
  });

  it("scales with in-flight requests and stops idle workers", async () => {
    const many = await Promise.all(Array.from({ length: 6 }, (_, i) => api(p, "POST", `/lb/${ep.api!.id}/add`, { a: i, b: 1 })));
    expect(many.map((r) => r.body.sum)).toEqual([1, 2, 3, 4, 5, 6]);
    await waitFor("LB workers to stop after idleTimeout", () => live(ep.api!.id).length === 0, 15_000);
  }, 25_000);

  it("answers 503 NO_WORKER_READY when no worker can become ready in time", async () => {
    const broken = await startTestPlatform({ lbReadyWaitMs: 1500, pythonForImage: () => "/nonexistent/python" });
    try {
      const d = await deploy(broken, artifact, [{ name: "api", type: "LB" }]);
      const r = await api(broken, "GET", `/lb/${d.endpoints.api!.id}/hello`);
      expect(r.status).toBe(503);
      expect(r.body.error).toMatch(/No worker of endpoint "api" became ready in time: The worker did not start: \/nonexistent\/python/); // and why
    } finally {
      await broken.dispose();
    }
  });
});

describe("dead workers", () => {
  it("hands a dead worker's job back once, then fails it with 'worker died'", async () => {
    const r = await api(p, "POST", `/v2/${ep.work!.id}/run`, { input: { op: "die", seconds: 0.3 } });
    const done = await waitFinal(p, ep.work!.id, r.body.id, 20_000);
    expect(done).toMatchObject({ status: "FAILED", error: "worker died" });
    const row = p.context.store.jobs.get(r.body.id)!;
    expect(row.retries).toBe(1);
    // the endpoint recovers: workersMin is kept
    const next = await api(p, "POST", `/v2/${ep.work!.id}/runsync`, { input: { op: "echo", value: 1 } });
    expect(next.body.output).toEqual({ echo: 1 });
  }, 30_000);

  it("a worker killed mid-job (SIGKILL) has its job retried on another worker", async () => {
    const r = await api(p, "POST", `/v2/${ep.work!.id}/run`, { input: { op: "sleep", seconds: 1 } });
    const running = await waitFor("the job to start", async () => {
      const s = await api(p, "GET", `/v2/${ep.work!.id}/status/${r.body.id}`);
      return s.body.status === "IN_PROGRESS" ? s.body : undefined;
    });
    const worker = p.context.supervisor.workers.get(running.workerId)!;
    worker.proc!.kill("SIGKILL");
    const done = await waitFinal(p, ep.work!.id, r.body.id, 20_000);
    expect(done.status).toBe("COMPLETED");
    expect(done.workerId).not.toBe(running.workerId);
    expect(p.context.store.jobs.get(r.body.id)!.retries).toBe(1);
  }, 30_000);

  it("a worker that stops pinging is unhealthy: killed, its job handed back", async () => {
    const r = await api(p, "POST", `/v2/${ep.work!.id}/run`, { input: { op: "sleep", seconds: 2 } });
    const running = await waitFor("the job to start", async () => {
      const s = await api(p, "GET", `/v2/${ep.work!.id}/status/${r.body.id}`);
      return s.body.status === "IN_PROGRESS" ? s.body : undefined;
    });
    const worker = p.context.supervisor.workers.get(running.workerId)!;
    process.kill(worker.pid!, "SIGSTOP"); // the Python process (inside bwrap: its child) frozen: no pings, no exit
    await waitFor("the worker to be found unhealthy", () => worker.unhealthy, 10_000);
    const done = await waitFinal(p, ep.work!.id, r.body.id, 20_000);
    expect(done.status).toBe("COMPLETED");
    expect(done.workerId).not.toBe(running.workerId);
    await waitFor("the frozen worker to be gone", () => worker.exited, 5000);
  }, 30_000);

  it("replaces workers when the endpoint changes (outdated)", async () => {
    const before = live(ep.work!.id).map((w) => w.id);
    await gqlOk(p, "mutation($i: EndpointInput!) { saveEndpoint(input: $i) { id } }", {
      i: { id: ep.work!.id, name: "work", env: [{ key: "VERSION", value: "2" }] },
    });
    await waitFor("new workers", () => live(ep.work!.id).some((w) => !before.includes(w.id)) && live(ep.work!.id).every((w) => !before.includes(w.id)), 15_000);
    const r = await api(p, "POST", `/v2/${ep.work!.id}/runsync`, { input: { op: "env", value: "VERSION" } });
    expect(r.body.output).toEqual({ value: "2" });
  }, 25_000);
});
