/**
 * svc:dev-server without a platform: route table, bodies, OpenAPI, resource cache, provisioner
 * (fake client), watcher ignores and debounce, the h3 app through app.request(), port fallback.
 */
import { createServer, type Server } from "node:net";
import { mkdtemp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ignore from "ignore";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../core/logger.ts";
import type { Manifest, ManifestEndpoint } from "../../core/types.ts";
import { parseRunsyncBody, runsyncStatus, isInputError } from "../../dev/routes/input.ts";
import { paramsSchema, schemaForAnnotation } from "../../core/function-schema.ts";
import { generateOpenApi } from "../../dev/routes/openapi.ts";
import { Provisioner, type ProvisionClient } from "../../dev/provisioning/provisioner.ts";
import { configHash, planResources, readResourceCache, RESOURCE_CACHE_FILE, stableStringify } from "../../dev/provisioning/resource-cache.ts";
import { mapLimit } from "../../core/map-limit.ts";
import { createDevApp, type DevRoutesState } from "../../dev/routes/routes.ts";
import { buildRouteTable, matchPath, preferredAlias, resolveRoute } from "../../dev/routes/routes-table.ts";
import { serve } from "../../dev/server.ts";
import { isIgnoredPath, watchProject } from "../../dev/watcher.ts";
import { endpointInput } from "../../plugins/_provisioning.ts";
import type { Job } from "../../dev/routes/input.ts";

const silent = createLogger("silent");

function qb(name: string, module: string, fn = name, extra: Partial<ManifestEndpoint> = {}): ManifestEndpoint {
  return {
    name,
    type: "QB",
    file: `${module.replace(/\./g, "/")}.py`,
    module,
    handler: `handlers/${name}.py`,
    functions: [{ name: fn, module, line: 3, isAsync: false, isGenerator: false }],
    hardware: { instanceIds: ["cpu3c-2-4"] },
    image: "svc/worker-cpu:py3.11-slim",
    scaling: { workersMin: 0, workersMax: 1, idleTimeout: 5, scalerType: "QUEUE_DELAY", scalerValue: 4 },
    executionTimeoutMs: 600000,
    env: {},
    dependencies: [],
    ...extra,
  };
}

function lb(name: string, module: string, routes: Array<[string, string, string]>): ManifestEndpoint {
  return {
    ...qb(name, module),
    type: "LB",
    functions: routes.map(([method, path, fn], i) => ({
      name: fn,
      module,
      line: 5 + i,
      isAsync: false,
      isGenerator: false,
      httpMethod: method as "GET",
      httpPath: path,
    })),
  };
}

function manifestOf(...endpoints: ManifestEndpoint[]): Manifest {
  return {
    version: 1,
    app: "dev-app",
    pythonVersion: "3.11",
    fingerprint: "sha256:0123456789abcdef0123",
    endpoints: Object.fromEntries(endpoints.map((e) => [e.name, e])),
    functions: Object.fromEntries(endpoints.flatMap((e) => e.functions.map((f) => [f.name, e.name]))),
    routes: {},
  };
}

const app = manifestOf(
  qb("hello", "workers.hello"),
  lb("api", "workers.api", [
    ["GET", "/health", "health"],
    ["POST", "/echo", "echo"],
    ["GET", "/items/{id}", "item"],
  ]),
);

describe("route table", () => {
  const table = buildRouteTable(app);

  it("addresses a queue-based function by the last module segment and by the dotted path", () => {
    for (const path of ["/hello/runsync", "/workers.hello/runsync"]) {
      const r = resolveRoute(table, "POST", path);
      expect(r.kind).toBe("qb-run");
      if (r.kind === "qb-run") expect(r.target).toMatchObject({ endpoint: "hello", function: "hello" });
    }
    expect(resolveRoute(table, "GET", "/hello/status/job_1")).toMatchObject({ kind: "qb-status", jobId: "job_1" });
    expect(resolveRoute(table, "GET", "/hello/runsync")).toMatchObject({ kind: "error", error: { status: 405, code: "METHOD_NOT_ALLOWED" } });
  });

  it("routes load-balanced paths by method, with path parameters, and 405 for a wrong method", () => {
    expect(resolveRoute(table, "GET", "/api/health")).toMatchObject({ kind: "lb", target: { function: "health" } });
    expect(resolveRoute(table, "POST", "/workers.api/echo")).toMatchObject({ kind: "lb", target: { function: "echo" } });
    expect(resolveRoute(table, "GET", "/api/items/42")).toMatchObject({ kind: "lb", params: { id: "42" } });
    expect(resolveRoute(table, "DELETE", "/api/echo")).toMatchObject({
      kind: "error",
      error: { status: 405, code: "METHOD_NOT_ALLOWED", message: expect.stringContaining("accepts POST") },
    });
    expect(resolveRoute(table, "GET", "/api/nope")).toMatchObject({ kind: "error", error: { status: 404, code: "NOT_FOUND" } });
    expect(resolveRoute(table, "POST", "/nope/runsync")).toMatchObject({ kind: "error", error: { status: 404, code: "UNKNOWN_MODULE" } });
  });

  it("makes a shared last segment ambiguous but keeps dotted paths working", () => {
    const t = buildRouteTable(manifestOf(qb("a", "one.worker"), qb("b", "two.worker")));
    expect(resolveRoute(t, "POST", "/worker/runsync")).toMatchObject({ kind: "error", error: { status: 400, code: "AMBIGUOUS" } });
    expect(resolveRoute(t, "POST", "/two.worker/runsync")).toMatchObject({ kind: "qb-run", target: { endpoint: "b" } });
    expect(preferredAlias(t, "one.worker")).toBe("one.worker");
    expect(preferredAlias(table, "workers.hello")).toBe("hello");
  });

  it("needs the function name when one module has several queue-based functions", () => {
    const t = buildRouteTable(manifestOf(qb("a", "jobs", "resize"), qb("b", "jobs", "crop")));
    expect(resolveRoute(t, "POST", "/jobs/runsync")).toMatchObject({ kind: "error", error: { status: 400, code: "AMBIGUOUS" } });
    expect(resolveRoute(t, "POST", "/jobs/crop/runsync")).toMatchObject({ kind: "qb-run", target: { endpoint: "b" } });
    expect(resolveRoute(t, "GET", "/jobs/crop/status/j1")).toMatchObject({ kind: "qb-status", jobId: "j1" });
  });

  it("matches {param} and :param segments", () => {
    expect(matchPath("/a/{x}/c", "/a/1/c")).toEqual({ x: "1" });
    expect(matchPath("/a/:x", "/a/2")).toEqual({ x: "2" });
    expect(matchPath("/a/{x}", "/a/1/c")).toBeUndefined();
  });
});

describe("runsync bodies and statuses", () => {
  it("accepts the envelope and a bare object; rejects bad JSON and non-objects", () => {
    expect(parseRunsyncBody('{"input": {"name": "x"}}')).toEqual({ ok: true, input: { name: "x" } });
    expect(parseRunsyncBody('{"input": {"name": "x"}, "policy": {}}')).toEqual({ ok: true, input: { name: "x" } });
    expect(parseRunsyncBody('{"name": "x"}')).toEqual({ ok: true, input: { name: "x" } });
    expect(parseRunsyncBody('{"input": "x", "other": 1}')).toEqual({ ok: true, input: { input: "x", other: 1 } });
    expect(parseRunsyncBody("")).toEqual({ ok: true, input: {} });
    expect(parseRunsyncBody("{bad")).toMatchObject({ ok: false, message: expect.stringContaining("The request body is not valid JSON") });
    expect(parseRunsyncBody("[1]")).toMatchObject({ ok: false });
    expect(parseRunsyncBody('{"input": 3}')).toMatchObject({ ok: false });
  });

  it("maps jobs to 200 / 202 / 400", () => {
    expect(runsyncStatus({ id: "j", status: "COMPLETED" })).toBe(200);
    expect(runsyncStatus({ id: "j", status: "FAILED", error: "boom" })).toBe(200);
    expect(runsyncStatus({ id: "j", status: "IN_PROGRESS" })).toBe(202);
    expect(runsyncStatus({ id: "j", status: "FAILED", error: { error_type: "InputValidationError", error_message: "no" } })).toBe(400);
    expect(isInputError({ id: "j", status: "FAILED", error: '{"error_type": "InputValidationError"}' })).toBe(true);
    expect(isInputError({ id: "j", status: "FAILED", error: "InputValidationError: name must be a string" })).toBe(true);
    expect(isInputError({ id: "j", status: "FAILED", error: '{"error_type": "ValueError"}' })).toBe(false);
    expect(isInputError({ id: "j", status: "FAILED", error: "{not json" })).toBe(false);
  });
});

describe("OpenAPI", () => {
  it("has one operation per queue-based function and per load-balanced route", () => {
    const doc = generateOpenApi(app) as { openapi: string; paths: Record<string, Record<string, { operationId: string; requestBody?: unknown }>> };
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.paths["/hello/runsync"]?.post?.operationId).toBe("hello_runsync");
    expect(doc.paths["/hello/status/{jobId}"]?.get).toBeDefined();
    expect(doc.paths["/api/health"]?.get?.operationId).toBe("health_get");
    expect(doc.paths["/api/echo"]?.post?.requestBody).toBeDefined();
    expect(doc.paths["/api/items/{id}"]?.get).toBeDefined();
    expect(doc.paths["/"]?.get).toBeDefined();
  });

  it("turns Python annotations and parameters into schemas", () => {
    expect(schemaForAnnotation("int")).toEqual({ type: "integer" });
    expect(schemaForAnnotation("Optional[str]")).toEqual({ type: "string", nullable: true });
    expect(schemaForAnnotation("list[float] | None")).toEqual({ type: "array", items: { type: "number" }, nullable: true });
    expect(schemaForAnnotation("dict[str, int]")).toEqual({ type: "object", additionalProperties: { type: "integer" } });
    expect(
      paramsSchema([
        { name: "prompt", annotation: "str" },
        { name: "steps", annotation: "int", default: 30 },
      ]),
    ).toEqual({
      type: "object",
      properties: { prompt: { type: "string" }, steps: { type: "integer", default: 30 } },
      required: ["prompt"],
      additionalProperties: false,
    });
    expect(paramsSchema(undefined)).toMatchObject({ type: "object", additionalProperties: true });
  });
});

describe("resource cache", () => {
  const hello = app.endpoints.hello!;

  it("hashes configuration, not the runtime-only fields", () => {
    const base = endpointInput(hello, { prefix: "live-" });
    expect(configHash({ ...base, id: "ep_1", buildId: "b1" })).toBe(configHash({ ...base, id: "ep_2", buildId: "b2" }));
    expect(configHash({ ...base, workersMax: 5 })).not.toBe(configHash(base));
    expect(stableStringify({ b: 1, a: [2, { d: 1, c: 2 }] })).toBe('{"a":[2,{"c":2,"d":1}],"b":1}');
  });

  it("plans create / reuse / update from the cache and what the platform still has", () => {
    const entry = (id: string, hash: string) => ({
      endpoint: "x",
      name: "live-x",
      id,
      type: "QB" as const,
      url: "u",
      configHash: hash,
      platformUrl: "p",
      updatedAt: "",
    });
    const cached: Record<string, ReturnType<typeof entry>> = { same: entry("ep_1", "h1"), changed: entry("ep_2", "old"), gone: entry("ep_3", "h3") };
    const plan = planResources(
      [
        { endpoint: "same", hash: "h1" },
        { endpoint: "changed", hash: "new" },
        { endpoint: "gone", hash: "h3" },
        { endpoint: "fresh", hash: "h4" },
      ],
      (name) => cached[name],
      new Set(["ep_1", "ep_2"]),
    );
    expect(plan.map((p) => p.action)).toEqual(["reuse", "update", "create", "create"]);
  });

  it("runs at most `limit` at a time and waits for all before failing", async () => {
    let active = 0;
    let most = 0;
    const done: number[] = [];
    await expect(
      mapLimit([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
        active++;
        most = Math.max(most, active);
        await new Promise((r) => setTimeout(r, 5));
        active--;
        done.push(n);
        if (n === 2) throw new Error("two");
        return n;
      }),
    ).rejects.toThrow("two");
    expect(most).toBe(3);
    expect(done).toHaveLength(7);
  });
});

function fakeClient(): ProvisionClient & { saved: Array<{ id?: string; name: string; buildId?: string }>; deleted: string[]; ids: Set<string> } {
  let n = 0;
  const ids = new Set<string>();
  const saved: Array<{ id?: string; name: string; buildId?: string }> = [];
  const deleted: string[] = [];
  return {
    url: "http://platform.test",
    saved,
    deleted,
    ids,
    async saveEndpoint(input) {
      await new Promise((r) => setTimeout(r, 10));
      saved.push({ id: input.id, name: input.name, buildId: input.buildId });
      const id = input.id ?? `ep_${++n}`;
      ids.add(id);
      return { id, name: input.name, url: `http://platform.test/v2/${id}`, buildId: input.buildId ?? null } as never;
    },
    async deleteEndpoint(id) {
      deleted.push(id);
      ids.delete(id);
      return true;
    },
  };
}

describe("provisioner", () => {
  let root: string;
  afterEach(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("deploys lazily once, follows new builds, tears down and clears the cache", async () => {
    root = await mkdtemp(join(tmpdir(), "svc-dev-prov-"));
    const client = fakeClient();
    const p = new Provisioner({ root, platform: client, logger: silent });
    await p.init(app, "b1", []);
    expect(p.status().map((s) => s.state)).toEqual(["lazy", "lazy"]);
    const [a, b] = await Promise.all([p.ensure("hello"), p.ensure("hello")]);
    expect(a.id).toBe(b.id);
    expect(client.saved).toEqual([{ id: undefined, name: "live-hello", buildId: "b1" }]);
    expect(p.status().find((s) => s.name === "hello")).toMatchObject({ state: "provisioned", platformName: "live-hello", id: a.id });

    const cache = await readResourceCache(root);
    expect(Object.values(cache.resources)).toMatchObject([{ endpoint: "hello", id: a.id, name: "live-hello" }]);

    const changes = await p.applyBuild(app, "b2");
    expect(changes.updated).toEqual(["hello"]);
    expect(client.saved.at(-1)).toEqual({ id: a.id, name: "live-hello", buildId: "b2" });
    const again = await p.applyBuild(app, "b2");
    expect(again.updated).toEqual([]);

    expect(await p.teardown()).toEqual(["live-hello"]);
    expect(client.deleted).toEqual([a.id]);
    expect(Object.keys((await readResourceCache(root)).resources)).toEqual([]);
  });

  it("deploys all at most 3 at a time and reuses the cache on restart (same id)", async () => {
    root = await mkdtemp(join(tmpdir(), "svc-dev-prov-"));
    const many = manifestOf(...Array.from({ length: 7 }, (_, i) => qb(`w${i}`, `w${i}`)));
    const client = fakeClient();
    const first = new Provisioner({ root, platform: client, logger: silent });
    await first.init(many, "b1", []);
    expect(first.plan().filter((s) => s.action === "create")).toHaveLength(7);
    const deployed = await first.provisionAll();
    expect(first.maxInFlight).toBe(3);
    expect(await readFile(join(root, RESOURCE_CACHE_FILE), "utf8")).toContain('"version": 1');

    // Restart without teardown (a crashed run): same build → nothing to save, same ids.
    const second = new Provisioner({ root, platform: client, logger: silent });
    await second.init(
      many,
      "b1",
      [...client.ids].map((id) => ({ id, name: "x", url: "" }) as never),
    );
    expect(second.plan().every((s) => s.action === "reuse")).toBe(true);
    const saves = client.saved.length;
    const again = await second.provisionAll();
    expect(client.saved.length).toBe(saves);
    expect(again.map((e) => e.id)).toEqual(deployed.map((e) => e.id));

    // Changed configuration → update in place; an endpoint gone from the platform → re-created.
    const changed = manifestOf(...Object.values(many.endpoints).map((e) => (e.name === "w0" ? { ...e, env: { A: "1" } } : e)));
    client.ids.delete(deployed[1]!.id);
    const third = new Provisioner({ root, platform: client, logger: silent });
    await third.init(
      changed,
      "b1",
      [...client.ids].map((id) => ({ id, name: "x", url: "" }) as never),
    );
    const plan = Object.fromEntries(third.plan().map((s) => [s.endpoint, s.action]));
    expect(plan).toMatchObject({ w0: "update", w1: "create", w2: "reuse" });
    await third.teardown();
  });
});

describe("watcher", () => {
  const ig = ignore().add(["build/", "*.log", "secret.py"]);

  it("ignores output folders, caches, hidden and gitignored paths", () => {
    for (const path of [
      ".svc/artifact.tar.gz",
      ".platform/resources.pkl",
      "node_modules/x/index.js",
      "a/__pycache__/b.pyc",
      ".git/HEAD",
      "x.pyc",
      "build",
      "out.log",
      "secret.py",
      ".venv/lib",
    ]) {
      expect(isIgnoredPath(ig, path, undefined), path).toBe(true);
    }
    for (const path of ["workers/hello.py", "requirements.txt", "svc.config.ts", ".gitignore", ".svcignore", "data/x.json"]) {
      expect(isIgnoredPath(ig, path, false), path).toBe(false);
    }
  });

  it("reports one debounced batch for source edits and nothing for output folders", async () => {
    const root = await mkdtemp(join(tmpdir(), "svc-dev-watch-"));
    try {
      await mkdir(join(root, "workers"));
      await mkdir(join(root, ".svc"));
      await writeFile(join(root, ".gitignore"), "ignored.py\n");
      const batches: string[][] = [];
      const w = await watchProject({ root, debounceMs: 150, onChange: (files) => batches.push(files) });
      await w.ready;
      await writeFile(join(root, ".svc", "artifact.tar.gz"), "x");
      await writeFile(join(root, "ignored.py"), "x = 1\n");
      await new Promise((r) => setTimeout(r, 400));
      expect(batches).toEqual([]);
      await writeFile(join(root, "workers", "a.py"), "a = 1\n");
      await writeFile(join(root, "workers", "b.py"), "b = 1\n");
      await new Promise((r) => setTimeout(r, 600));
      await w.close();
      expect(batches).toEqual([["workers/a.py", "workers/b.py"]]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("an editor that writes a file twice gives one batch: truncate-then-write settles first, and the same bytes again are no change", async () => {
    const root = await mkdtemp(join(tmpdir(), "svc-dev-watch-twice-"));
    try {
      await mkdir(join(root, "workers"));
      await writeFile(join(root, "workers", "a.py"), "a = 0\n");
      const batches: string[][] = [];
      const w = await watchProject({ root, onChange: (files) => batches.push(files) });
      await w.ready;
      const file = join(root, "workers", "a.py");
      // an editor that truncates, then writes
      await writeFile(file, "");
      await writeFile(file, "a = 1\n");
      await new Promise((r) => setTimeout(r, 300));
      expect(batches).toEqual([["workers/a.py"]]);
      // then writes the same bytes again (a second save, a formatter that changed nothing)
      await writeFile(file, "a = 1\n");
      await new Promise((r) => setTimeout(r, 300));
      expect(batches).toEqual([["workers/a.py"]]);
      // a real edit is reported
      await writeFile(file, "a = 2\n");
      await new Promise((r) => setTimeout(r, 300));
      await w.close();
      expect(batches).toEqual([["workers/a.py"], ["workers/a.py"]]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

function fakeState(overrides: Partial<DevRoutesState> = {}): DevRoutesState & { calls: string[] } {
  const table = buildRouteTable(app);
  const calls: string[] = [];
  return {
    calls,
    manifest: () => app,
    table: () => table,
    health: () => ({ status: "ok", app: "dev-app" }),
    async ensure(endpoint) {
      calls.push(`ensure ${endpoint}`);
      return { id: `ep_${endpoint}`, url: `http://p/v2/ep_${endpoint}` };
    },
    async runsync(remote, input) {
      calls.push(`runsync ${remote.id} ${JSON.stringify(input)}`);
      if (input.slow) return { job: { id: "job_slow", status: "IN_QUEUE" } };
      if (input.bad) return { job: { id: "job_bad", status: "FAILED", error: "bad" }, httpStatus: 400 };
      if (input.badType) return { job: { id: "job_bad", status: "FAILED", error: { error_type: "InputValidationError", error_message: "bad" } } };
      if (input.fail) return { job: { id: "job_fail", status: "FAILED", error: "boom" }, httpStatus: 200 };
      return { job: { id: "job_1", status: "COMPLETED", output: { echo: input }, delayTime: 1, executionTime: 2 } as Job };
    },
    async status(_remote, jobId) {
      return { job: { id: jobId, status: "COMPLETED", output: 1 } };
    },
    async lbRequest(remote, method, path, body, headers) {
      calls.push(`lb ${remote.id} ${method} ${path} ${body ?? ""} ${headers["content-type"] ?? ""}`);
      return { status: 201, headers: { "content-type": "application/json" }, body: { got: body ? JSON.parse(body) : null } };
    },
    async metrics() {
      calls.push("metrics");
      return new Response("svc_jobs_total 3\n", { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } });
    },
    syncTimeoutMs: 1000,
    ...overrides,
  };
}

describe("routes (h3 app)", () => {
  it("GET /metrics answers the platform's metrics as the platform gave them", async () => {
    const state = fakeState();
    const res = await createDevApp(state).request("/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(await res.text()).toBe("svc_jobs_total 3\n");
    expect(state.calls).toEqual(["metrics"]);
  });

  it("answers health, runsync (both body forms), 202 with a status URL, 400s and 404s", async () => {
    const state = fakeState();
    const h3 = createDevApp(state);
    const health = await h3.request("/");
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: "ok" });

    const ok = await h3.request("/hello/runsync", { method: "POST", body: '{"input": {"name": "a"}}' });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ id: "job_1", status: "COMPLETED", output: { echo: { name: "a" } } });
    const bare = await h3.request("/workers.hello/runsync", { method: "POST", body: '{"name": "b"}' });
    expect(await bare.json()).toMatchObject({ output: { echo: { name: "b" } } });

    const slow = await h3.request("http://localhost:8888/hello/runsync", { method: "POST", body: '{"slow": true}' });
    expect(slow.status).toBe(202);
    expect(await slow.json()).toMatchObject({ id: "job_slow", status: "IN_QUEUE", statusUrl: "http://localhost:8888/hello/status/job_slow" });
    const polled = await h3.request("/hello/status/job_slow");
    expect(await polled.json()).toMatchObject({ id: "job_slow", status: "COMPLETED" });

    expect((await h3.request("/hello/runsync", { method: "POST", body: '{"bad": true}' })).status).toBe(400);
    expect((await h3.request("/hello/runsync", { method: "POST", body: '{"badType": true}' })).status).toBe(400);
    expect((await h3.request("/hello/runsync", { method: "POST", body: '{"fail": true}' })).status).toBe(200);
    const badJson = await h3.request("/hello/runsync", { method: "POST", body: "{nope" });
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toMatchObject({ code: "BAD_REQUEST" });
    expect((await h3.request("/hello/runsync", { method: "POST", body: "[]" })).status).toBe(400);
    const unknown = await h3.request("/nothing/here", { method: "POST" });
    expect(unknown.status).toBe(404);
    // The platform's error body, nothing else (core/http-errors.ts).
    expect(await unknown.json()).toEqual({ error: expect.stringContaining('No worker module "nothing"'), code: "UNKNOWN_MODULE" });
    expect((await h3.request("/hello/runsync?wait=abc", { method: "POST" })).status).toBe(400);
    // Bad input never reached the platform.
    expect(state.calls.filter((c) => c.startsWith("runsync")).length).toBe(6);
  });

  it("proxies load-balanced routes with method, path, query and body", async () => {
    const state = fakeState();
    const h3 = createDevApp(state);
    const res = await h3.request("/api/echo?x=1", { method: "POST", body: '{"text": "hi"}', headers: { "content-type": "application/json" } });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ got: { text: "hi" } });
    expect(state.calls).toContain('lb ep_api POST /echo?x=1 {"text": "hi"} application/json');
    const badJson = await h3.request("/api/echo", { method: "POST", body: "{bad" });
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toMatchObject({ code: "BAD_REQUEST", error: expect.stringContaining("The request body is not valid JSON") });
    expect((await h3.request("/api/echo", { method: "GET" })).status).toBe(405);
  });

  it("serves the docs page, its assets from swagger-ui-dist, and the OpenAPI document", async () => {
    const h3 = createDevApp(fakeState());
    const docs = await h3.request("/docs");
    expect(docs.headers.get("content-type")).toContain("text/html");
    const html = await docs.text();
    expect(html).toContain("/docs/swagger-ui-bundle.js");
    expect(html).not.toMatch(/https?:\/\/(cdn|unpkg)/);
    const bundle = await h3.request("/docs/swagger-ui-bundle.js");
    expect(bundle.status).toBe(200);
    expect((await bundle.text()).length).toBeGreaterThan(100_000);
    expect((await h3.request("/docs/package.json")).status).toBe(404);
    const spec = (await (await h3.request("/openapi.json")).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(spec.paths)).toEqual(expect.arrayContaining(["/hello/runsync", "/api/echo", "/api/health"]));
  });

  it("answers a platform failure as 502 JSON, not a crash", async () => {
    const { errors } = await import("../../core/errors.ts");
    const h3 = createDevApp(
      fakeState({
        ensure: async () => {
          throw errors.PLATFORM_UNREACHABLE("http://p", new Error("ECONNREFUSED"));
        },
      }),
    );
    const res = await h3.request("/hello/runsync", { method: "POST", body: "{}" });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ code: "PLATFORM_UNREACHABLE" });
  });

  it("answers an error that is not ours as 500 with the platform's body, and logs it", async () => {
    const logged: string[] = [];
    const h3 = createDevApp(
      fakeState({
        ensure: async () => {
          throw new Error("a bug");
        },
      }),
      (line) => logged.push(line),
    );
    const res = await h3.request("/hello/runsync", { method: "POST", body: "{}" });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: "internal error" });
    expect(logged.join("\n")).toContain("a bug");
  });
});

describe("serve", () => {
  it("takes the next port when the requested one is in use", async () => {
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    const taken = (blocker.address() as { port: number }).port;
    const served = await serve(createDevApp(fakeState()), { host: "127.0.0.1", port: taken });
    try {
      expect(served.fallback).toBe(true);
      expect(served.port).toBeGreaterThan(taken);
      expect(served.port).toBeLessThanOrEqual(taken + 100);
      const res = await fetch(`${served.url}/`);
      expect(res.status).toBe(200);
    } finally {
      await served.close();
      await new Promise((r) => blocker.close(r));
    }
  });
});
