/** The HTTP API without workers: auth, malformed input, 404s, GraphQL management, uploads, limits. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync, statSync } from "node:fs";
import { createHash } from "node:crypto";
import {
  api,
  authHeaders,
  buildFixtureArtifact,
  gql,
  gqlOk,
  startTestPlatform,
  uploadArtifact,
  waitFor,
  type BuiltArtifact,
  type TestPlatform,
} from "./_support.ts";
import { rawTar } from "./_raw-tar.ts";

let p: TestPlatform;
let artifact: BuiltArtifact;
let endpointId: string;

beforeAll(async () => {
  p = await startTestPlatform({ rateLimits: { purge: { requests: 2, concurrent: 0 } }, maxRunBytes: 2000, maxRunsyncBytes: 4000 });
  artifact = await buildFixtureArtifact();
  const { saveEndpoint } = await gqlOk<{ saveEndpoint: { id: string } }>(p, 'mutation { saveEndpoint(input: {name: "no-build", workersMax: 1}) { id } }');
  endpointId = saveEndpoint.id;
});
afterAll(async () => {
  await p.dispose();
});

const raw = (method: string, path: string, headers: Record<string, string> = {}, body?: string) => fetch(`${p.url}${path}`, { method, headers, body });

describe("auth", () => {
  it("refuses a missing or wrong key with 401 {error} on every route family", async () => {
    const routes: Array<[string, string]> = [
      ["POST", `/v2/${endpointId}/run`],
      ["POST", `/v2/${endpointId}/runsync`],
      ["GET", `/v2/${endpointId}/status/x`],
      ["GET", `/v2/${endpointId}/status-sync/x`],
      ["GET", `/v2/${endpointId}/stream/x`],
      ["POST", `/v2/${endpointId}/cancel/x`],
      ["POST", `/v2/${endpointId}/retry/x`],
      ["POST", `/v2/${endpointId}/purge-queue`],
      ["GET", `/v2/${endpointId}/health`],
      ["POST", "/graphql"],
      ["PUT", "/v2/_artifacts/up_nope"],
      ["GET", `/lb/${endpointId}/hello`],
      ["GET", "/v2/files/f_x/a.txt"],
      ["GET", "/v2/_worker/wk_x/job-take"],
      ["POST", "/v2/_worker/wk_x/job-done/j"],
      ["POST", "/v2/_worker/wk_x/jobs-done"],
      ["POST", "/v2/_worker/wk_x/job-stream/j"],
      ["GET", "/v2/_worker/wk_x/ping"],
      ["GET", "/v2/_worker/wk_x/signals"],
      ["POST", "/v2/_worker/wk_x/files?name=a"],
      ["GET", "/nothing-here"],
    ];
    for (const [method, path] of routes) {
      for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: "wrong" }] as Array<Record<string, string>>) {
        const res = await raw(method, path, headers, method === "GET" ? undefined : "{}");
        expect(res.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(401);
        const body = (await res.json()) as { error: string; code: string };
        expect(body.error).toMatch(/API key/);
        expect(body.code, `${method} ${path}`).toBe(path.startsWith("/v2/_worker/") ? "WORKER_TOKEN_INVALID" : "UNAUTHORIZED"); // one body everywhere
      }
    }
    // Host-routed load-balancer requests too
    const lb = await raw("GET", "/hello", { host: `${endpointId}.localhost` });
    expect(lb.status).toBe(401);
  });

  it("accepts `Bearer <key>` and the bare key", async () => {
    for (const authorization of [`Bearer ${p.apiKey}`, p.apiKey, `bearer ${p.apiKey}`]) {
      const res = await raw("GET", `/v2/${endpointId}/health`, { authorization });
      expect(res.status).toBe(200);
    }
  });

  it("stores the key hashed and the plain key in a 0600 file", () => {
    expect(p.apiKeyFile).toBeDefined();
    expect(readFileSync(p.apiKeyFile!, "utf8").trim()).toBe(p.apiKey);
    expect(statSync(p.apiKeyFile!).mode & 0o777).toBe(0o600);
    expect(p.context.store.meta.get("api_key_hash")).toBe(createHash("sha256").update(p.apiKey).digest("hex"));
  });
});

describe("malformed input and unknown things", () => {
  it("answers 400, never 500, for malformed JSON and bodies", async () => {
    for (const [path, body] of [
      [`/v2/${endpointId}/run`, "{not json"],
      [`/v2/${endpointId}/runsync`, "[1,2"],
      [`/v2/${endpointId}/run`, '{"noinput": 1}'],
      [`/v2/${endpointId}/run`, '{"input": {}, "policy": {"ttl": 5}}'],
      [`/v2/${endpointId}/run`, '{"input": {}, "webhook": "not a url"}'],
      ["/graphql", "{not json"],
      ["/graphql", '{"query": 5}'],
      ["/graphql", '{"query": "{ myself { "}'],
      ["/graphql", '{"query": "{ nope }"}'],
      ["/graphql", '{"query": "query($x: Int!) { endpoint(id: $x) { id } }", "variables": {"x": "str"}}'],
      ["/graphql", "[]"],
    ] as const) {
      const res = await api(p, "POST", path, body);
      expect(res.status, `${path} ${body}`).toBe(400);
      if (path === "/graphql") expect(res.body.errors[0].message).toBeTruthy();
      else expect(res.body.error).toBeTruthy();
    }
  });

  it("names the catalogue code of each refusal: {error, code} in REST, extensions.code in GraphQL", async () => {
    const deep = `{"input": ${"[".repeat(300)}${"]".repeat(300)}}`;
    for (const [method, path, body, code] of [
      ["POST", `/v2/${endpointId}/run`, "{not json", "JSON_MALFORMED"],
      ["POST", `/v2/${endpointId}/run`, deep, "JSON_TOO_DEEP"],
    ] as const) {
      const res = await api(p, method, path, body);
      expect(res.status, `${path} ${code}`).toBe(400);
      expect(res.body.code).toBe(code);
    }
    const noKey = await raw("POST", `/v2/${endpointId}/run`, {}, '{"input": {}}');
    expect(((await noKey.json()) as { code: string }).code).toBe("UNAUTHORIZED");

    const create = 'mutation($n: String!) { secretCreate(input: {name: $n, value: "v"}) { name } }';
    await gqlOk(p, create, { n: "codes_secret" });
    for (const [query, variables, code] of [
      [create, { n: "codes_secret" }, "SECRET_EXISTS"],
      [create, { n: "not a name!" }, "SECRET_INVALID"],
      ['mutation { secretDelete(name: "never_made") }', undefined, "SECRET_NOT_FOUND"],
    ] as const) {
      const r = await gql(p, query, variables);
      expect(r.errors?.[0]?.extensions?.code, code).toBe(code);
    }
    await gqlOk(p, 'mutation { secretDelete(name: "codes_secret") }');
  });

  it("answers 404 {error} for unknown endpoints, jobs and routes", async () => {
    for (const [method, path] of [
      ["POST", "/v2/ep_nope/run"],
      ["GET", "/v2/ep_nope/health"],
      ["GET", `/v2/${endpointId}/status/00000000-0000-0000-0000-000000000000`],
      ["GET", `/v2/${endpointId}/stream/nope`],
      ["POST", `/v2/${endpointId}/cancel/nope`],
      ["POST", `/v2/${endpointId}/retry/nope`],
      ["GET", "/v2/files/f_nope/a.txt"],
      ["GET", "/lb/ep_nope/x"],
      ["GET", "/v3/whatever"],
    ] as const) {
      const res = await api(p, method, path, method === "POST" ? { input: {} } : undefined);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(typeof res.body.error).toBe("string");
      expect(res.body.code, `${method} ${path}`).toBe("NOT_FOUND");
    }
  });

  it("limits payloads: 413 PAYLOAD_TOO_LARGE", async () => {
    const big = { input: { text: "x".repeat(3000) } };
    expect((await api(p, "POST", `/v2/${endpointId}/run`, big)).status).toBe(413);
    const res = await api(p, "POST", `/v2/${endpointId}/runsync?wait=1000`, big);
    expect(res.status).toBe(200); // under the (larger) runsync limit; no worker: non-final answer
    expect(res.body.status).toBe("IN_QUEUE");
    expect((await api(p, "POST", `/v2/${endpointId}/runsync`, { input: { text: "x".repeat(5000) } })).status).toBe(413);
  });

  it("runsync (served without h3) reads a chunked body within its limit, checks wait, and keeps the connection", async () => {
    const { request, Agent } = await import("node:http");
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (path: string, chunks: string[]) =>
      new Promise<{ status: number; body: { error?: string; status?: string }; socket: unknown }>((resolve, reject) => {
        const req = request(`${p.url}${path}`, { method: "POST", agent, headers: { ...authHeaders(p.apiKey), "transfer-encoding": "chunked" } }, (res) => {
          let text = "";
          res.on("data", (c) => (text += c));
          res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text), socket: req.socket }));
        });
        req.on("error", reject);
        for (const chunk of chunks) req.write(chunk);
        req.end();
      });
    const tooBig = await send(`/v2/${endpointId}/runsync`, ['{"input":{"text":"', "x".repeat(3000), "x".repeat(3000), '"}}']);
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error).toMatch(/over the 4.0 KB limit/);
    const badWait = await send(`/v2/${endpointId}/runsync?wait=soon`, ['{"input":{}}']);
    expect(badWait.status).toBe(400);
    expect(badWait.body.error).toMatch(/wait must be a number/);
    const fine = await send(`/v2/${endpointId}/runsync?wait=1000`, ['{"input":', '{"text":"ok"}}']);
    expect(fine.status).toBe(200);
    expect(fine.body.status).toBe("IN_QUEUE"); // no worker: the non-final answer after the wait
    expect(fine.socket).toBe(tooBig.socket); // one kept-alive connection served all three
    agent.destroy();
  });

  it("runsync on a load-balancer host goes to the load-balancer proxy, not to the queue", async () => {
    const { request } = await import("node:http");
    const before = (await api(p, "GET", `/v2/${endpointId}/health`)).body.jobs;
    const res = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      // node:http, not fetch: fetch does not send a Host header of its own
      const req = request(`${p.url}/v2/${endpointId}/runsync`, { method: "POST", headers: { ...authHeaders(p.apiKey), host: "nope.localhost" } }, (r) => {
        let text = "";
        r.on("data", (c) => (text += c));
        r.on("end", () => resolve({ status: r.statusCode!, text }));
      });
      req.on("error", reject);
      req.end('{"input":{}}');
    });
    expect(res.status).toBe(404); // the proxy's answer: no load-balanced endpoint "nope"
    expect(JSON.parse(res.text).error).toMatch(/nope/);
    expect((await api(p, "GET", `/v2/${endpointId}/health`)).body.jobs).toEqual(before);
  });

  it("rate-limits per endpoint: 429 over the limit, with Retry-After the seconds left of the window", async () => {
    expect((await api(p, "POST", `/v2/${endpointId}/purge-queue`)).status).toBe(200);
    expect((await api(p, "POST", `/v2/${endpointId}/purge-queue`)).status).toBe(200);
    const third = await fetch(`${p.url}/v2/${endpointId}/purge-queue`, { method: "POST", headers: authHeaders(p.apiKey) });
    const body = (await third.json()) as { error: string; code: string };
    expect(third.status).toBe(429);
    expect(body.error).toMatch(/Too many requests/);
    expect(body.code).toBe("RATE_LIMITED");
    const retryAfter = Number(third.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(10); // the hosted limits' window is 10 s
  });

  it("a runsync over the limit (the hot path) answers 429 with Retry-After", async () => {
    const own = await startTestPlatform({ rateLimits: { windowMs: 60_000, runsync: { requests: 1, concurrent: 0 } } });
    try {
      const { saveEndpoint } = await gqlOk<{ saveEndpoint: { id: string } }>(own, 'mutation { saveEndpoint(input: {name: "limited", workersMax: 1}) { id } }');
      const send = () => fetch(`${own.url}/v2/${saveEndpoint.id}/runsync?wait=1`, { method: "POST", headers: authHeaders(own.apiKey), body: '{"input":{}}' });
      await (await send()).text();
      const refused = await send();
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(50); // most of the 60 s window is left
      await refused.text();
    } finally {
      await own.dispose();
    }
  });

  it("a runsync client that goes away ends its wait: its concurrent slot is free again and the job stays queued", async () => {
    const own = await startTestPlatform({ rateLimits: { runsync: { requests: 100, concurrent: 1 } } });
    try {
      const { saveEndpoint } = await gqlOk<{ saveEndpoint: { id: string } }>(own, 'mutation { saveEndpoint(input: {name: "no-build", workersMax: 1}) { id } }');
      const path = `/v2/${saveEndpoint.id}/runsync`;
      const leaving = new AbortController();
      const first = fetch(`${own.url}${path}`, { method: "POST", headers: authHeaders(own.apiKey), body: '{"input":{}}', signal: leaving.signal }).catch(
        () => "gone",
      );
      await waitFor("the first runsync to wait", async () => (await api(own, "GET", `/v2/${saveEndpoint.id}/health`)).body.jobs.inQueue === 1);
      expect((await api(own, "POST", path, { input: {} })).status).toBe(429);
      leaving.abort();
      expect(await first).toBe("gone");
      const second = await waitFor(
        "the slot to be free",
        async () => {
          const r = await api(own, "POST", `${path}?wait=1000`, { input: {} });
          return r.status === 200 ? r : undefined;
        },
        5000,
      );
      expect(second.body.status).toBe("IN_QUEUE");
      expect((await api(own, "GET", `/v2/${saveEndpoint.id}/health`)).body.jobs.inQueue).toBe(2);
    } finally {
      await own.dispose();
    }
  });
});

describe("queue routes without workers", () => {
  it("queues, reports, cancels and retries per reference section 1", async () => {
    const run = await api(p, "POST", `/v2/${endpointId}/run`, { input: { a: 1 }, policy: { lowPriority: true } });
    expect(run.status).toBe(200);
    expect(Object.keys(run.body).sort()).toEqual(["id", "status"]);
    expect(run.body.status).toBe("IN_QUEUE");
    const status = await api(p, "GET", `/v2/${endpointId}/status/${run.body.id}`);
    expect(status.body).toMatchObject({ id: run.body.id, status: "IN_QUEUE", executionTime: 0 });
    expect(typeof status.body.delayTime).toBe("number");
    const sync = await api(p, "GET", `/v2/${endpointId}/status-sync/${run.body.id}?wait=1000`);
    expect(sync.body).toEqual({ id: run.body.id, status: "IN_QUEUE" });
    const stream = await api(p, "GET", `/v2/${endpointId}/stream/${run.body.id}`);
    expect(stream.body).toEqual({ status: "IN_QUEUE", stream: [] });
    const retry = await api(p, "POST", `/v2/${endpointId}/retry/${run.body.id}`);
    expect(retry.status).toBe(400);
    const cancel = await api(p, "POST", `/v2/${endpointId}/cancel/${run.body.id}`);
    expect(cancel.body).toEqual({ id: run.body.id, status: "CANCELLED" });
    const after = await api(p, "GET", `/v2/${endpointId}/status/${run.body.id}`);
    expect(after.body.status).toBe("CANCELLED");
    const health = await api(p, "GET", `/v2/${endpointId}/health`);
    expect(health.body).toEqual({
      jobs: { completed: 0, failed: 0, inProgress: 0, inQueue: expect.any(Number), retried: 0 },
      workers: { idle: 0, running: 0, initializing: 0, ready: 0, throttled: 0, unhealthy: 0 },
      limits: expect.objectContaining({ flavour: "cpu3c-2-4", memoryBytes: 4 * 1024 ** 3, vcpus: 2 }), // docs/platform.md, "Resources"
    });
  });
});

describe("GraphQL management API", () => {
  it("creates, lists, updates and deletes endpoints; validates input into `errors`", async () => {
    const created = await gqlOk<any>(
      p,
      `mutation($i: EndpointInput!) { saveEndpoint(input: $i) { id name type gpuIds gpuCount workersMin workersMax idleTimeout scalerType scalerValue executionTimeoutMs imageName env { key value } url createdAt } }`,
      {
        i: {
          name: "gpu-ep",
          gpuIds: "ADA_24,AMPERE_16",
          gpuCount: 1,
          workersMax: 2,
          template: { imageName: "svc/worker-gpu:torch", env: [{ key: "A", value: "1" }] },
          env: [{ key: "B", value: "2" }],
        },
      },
    );
    const ep = created.saveEndpoint;
    expect(ep).toMatchObject({
      name: "gpu-ep",
      type: "QB",
      gpuIds: "ADA_24,AMPERE_16",
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 5,
      scalerType: "QUEUE_DELAY",
      scalerValue: 4,
      executionTimeoutMs: 600000,
      imageName: "svc/worker-gpu:torch",
    });
    expect(ep.env).toEqual([
      { key: "A", value: "1" },
      { key: "B", value: "2" },
    ]);
    expect(ep.url).toBe(`${p.url}/v2/${ep.id}`);
    const updated = await gqlOk<any>(p, `mutation($i: EndpointInput!) { saveEndpoint(input: $i) { id type url workersMax gpuIds } }`, {
      i: { id: ep.id, name: "gpu-ep", type: "LB", workersMax: 3 },
    });
    expect(updated.saveEndpoint).toEqual({ id: ep.id, type: "LB", url: `${p.url}/lb/${ep.id}`, workersMax: 3, gpuIds: "ADA_24,AMPERE_16" });
    const list = await gqlOk<any>(p, "{ myself { endpoints { id name } } }");
    expect(list.myself.endpoints.map((e: { id: string }) => e.id)).toContain(ep.id);
    const one = await gqlOk<any>(p, "query($id: String!) { endpoint(id: $id) { name } }", { id: ep.id });
    expect(one.endpoint.name).toBe("gpu-ep");

    for (const bad of [
      { name: "x", workersMin: 3, workersMax: 1 },
      { name: "x", gpuIds: "H100_FAKE" },
      { name: "x", executionTimeoutMs: 10 },
      { name: "", workersMax: 1 },
      { name: "x", type: "XX" },
      { id: "ep_missing", name: "x" },
      { name: "x", buildId: "bld_missing" },
    ]) {
      const r = await gql(p, "mutation($i: EndpointInput!) { saveEndpoint(input: $i) { id } }", { i: bad });
      expect(r.status, JSON.stringify(bad)).not.toBe(500);
      expect(r.errors?.[0]?.message, JSON.stringify(bad)).toBeTruthy();
    }

    expect((await gqlOk<any>(p, "mutation($id: String!) { deleteEndpoint(id: $id) }", { id: ep.id })).deleteEndpoint).toBe(true);
    expect((await gqlOk<any>(p, "query($id: String!) { endpoint(id: $id) { id } }", { id: ep.id })).endpoint).toBeNull();
    expect((await gqlOk<any>(p, "mutation($id: String!) { deleteEndpoint(id: $id) }", { id: ep.id })).deleteEndpoint).toBe(false);
  });

  it("saves templates and uses them by id", async () => {
    const t = await gqlOk<any>(
      p,
      'mutation { saveTemplate(input: {name: "t", imageName: "svc/worker-cpu:py3.11", env: [{key: "K", value: "V"}]}) { id name imageName env { key value } isServerless } }',
    );
    expect(t.saveTemplate).toMatchObject({ name: "t", imageName: "svc/worker-cpu:py3.11", env: [{ key: "K", value: "V" }], isServerless: true });
    const e = await gqlOk<any>(p, "mutation($i: EndpointInput!) { saveEndpoint(input: $i) { templateId imageName } }", {
      i: { name: "with-template", templateId: t.saveTemplate.id },
    });
    expect(e.saveEndpoint).toEqual({ templateId: t.saveTemplate.id, imageName: "svc/worker-cpu:py3.11" });
  });

  it("manages apps, environments, content-addressed uploads, builds and deploys", async () => {
    const first = await uploadArtifact(p, artifact, "graph-app");
    expect(first.skipped).toBe(false);
    const second = await uploadArtifact(p, artifact, "graph-app");
    expect(second.skipped).toBe(true); // same sha256: no PUT
    expect(second.buildId).not.toBe(first.buildId);

    const build = await gqlOk<any>(p, "query($id: String!) { getBuild(id: $id) { id appId sha256 size manifest createdAt } }", { id: first.buildId });
    expect(build.getBuild).toMatchObject({ id: first.buildId, appId: first.appId, sha256: artifact.sha256, size: artifact.size });
    expect(build.getBuild.manifest.endpoints.work.handler).toBe("handlers/work.py");

    const urls = await gqlOk<any>(p, "mutation($b: String!, $u: JSON!) { setBuildEndpointUrls(buildId: $b, urls: $u) { manifest } }", {
      b: first.buildId,
      u: { work: "http://127.0.0.1:1/v2/ep_x" },
    });
    expect(urls.setBuildEndpointUrls.manifest.urls).toEqual({ work: "http://127.0.0.1:1/v2/ep_x" });
    const inlined = await gql<any>(p, `query { getBuild(id: "${first.buildId}") { manifest } }`);
    expect(inlined.data.getBuild.manifest.urls.work).toBe("http://127.0.0.1:1/v2/ep_x");

    const env = await gqlOk<any>(
      p,
      'mutation($a: String!) { createEnvironment(appId: $a, name: "production") { id name appId activeBuildId endpoints { id } } }',
      { a: first.appId },
    );
    expect(env.createEnvironment).toMatchObject({ name: "production", appId: first.appId, activeBuildId: null, endpoints: [] });
    const dup = await gql(p, 'mutation($a: String!) { createEnvironment(appId: $a, name: "production") { id } }', { a: first.appId });
    expect(dup.errors?.[0]?.message).toMatch(/already exists/);
    const deployed = await gqlOk<any>(p, "mutation($e: String!, $b: String!) { deployBuildToEnvironment(environmentId: $e, buildId: $b) { activeBuildId } }", {
      e: env.createEnvironment.id,
      b: second.buildId,
    });
    expect(deployed.deployBuildToEnvironment.activeBuildId).toBe(second.buildId);
    const byName = await gqlOk<any>(p, 'query($a: String!) { environment(appId: $a, name: "production") { id activeBuildId } }', { a: first.appId });
    expect(byName.environment.activeBuildId).toBe(second.buildId);
    const apps = await gqlOk<any>(p, "{ apps { name environments { name } builds { id } } myself { apps { name } } }");
    const app = apps.apps.find((a: { name: string }) => a.name === "graph-app");
    expect(app.environments).toEqual([{ name: "production" }]);
    expect(app.builds).toHaveLength(2);
    expect((await gqlOk<any>(p, "mutation($id: String!) { deleteEnvironment(id: $id) }", { id: env.createEnvironment.id })).deleteEnvironment).toBe(true);
    expect((await gqlOk<any>(p, "mutation($id: String!) { deleteApp(id: $id) }", { id: first.appId })).deleteApp).toBe(true);
    expect((await gqlOk<any>(p, '{ app(name: "graph-app") { id } }')).app).toBeNull();
  });

  it("verifies uploads: size, sha256, gzip, safety; finalize needs the bytes and a valid manifest", async () => {
    const { createApp } = await gqlOk<any>(p, 'mutation { createApp(name: "upload-app") { id } }');
    const prep = async (size: number, sha256?: string) =>
      (
        await gqlOk<any>(
          p,
          "mutation($a: String!, $s: Int!, $h: String) { prepareArtifactUpload(appId: $a, size: $s, sha256: $h) { uploadUrl objectKey alreadyUploaded } }",
          { a: createApp.id, s: size, h: sha256 },
        )
      ).prepareArtifactUpload;
    const put = (url: string, body: Buffer, headers: Record<string, string> = { authorization: `Bearer ${p.apiKey}` }) =>
      fetch(url, { method: "PUT", headers: { "content-type": "application/gzip", ...headers }, body: new Uint8Array(body) });

    const bytes = readFileSync(artifact.path);
    const wrongSha = await prep(bytes.length, "0".repeat(64));
    const r1 = await put(wrongSha.uploadUrl, bytes);
    expect(r1.status).toBe(400);
    expect(((await r1.json()) as any).error).toMatch(/sha256/);

    const notGzip = Buffer.from("hello world, not gzip");
    const r2 = await put((await prep(notGzip.length)).uploadUrl, notGzip);
    expect(r2.status).toBe(400);

    const tooBig = await put((await prep(10)).uploadUrl, bytes);
    expect(tooBig.status).toBe(413);

    const evil = rawTar([{ name: "../../escape.py", body: "x" }]);
    const r3 = await put((await prep(evil.length)).uploadUrl, evil);
    expect(r3.status).toBe(400);
    expect(((await r3.json()) as any).error).toMatch(/Refusing to unpack/);

    // the URL's own token works without the API key (a presigned URL); no token and no key does not
    const up = await prep(bytes.length);
    const noAuth = await put(up.uploadUrl.replace(/\?token=.*/, ""), bytes, {});
    expect(noAuth.status).toBe(401);
    expect((await put(up.uploadUrl, bytes, {})).status).toBe(200);

    const pending = await prep(bytes.length);
    const early = await gql(p, "mutation($k: String!, $m: JSON!) { finalizeArtifactUpload(objectKey: $k, manifest: $m) { id } }", {
      k: pending.objectKey,
      m: artifact.manifest,
    });
    expect(early.errors?.[0]?.message).toMatch(/PUT the artifact/);
    const badManifest = await gql(p, "mutation($k: String!, $m: JSON!) { finalizeArtifactUpload(objectKey: $k, manifest: $m) { id } }", {
      k: up.objectKey,
      m: { version: 2 },
    });
    expect(badManifest.errors?.[0]?.message).toMatch(/Invalid manifest/);
    expect((badManifest.errors?.[0] as { extensions?: { code?: string } } | undefined)?.extensions?.code).toBe("MANIFEST_INVALID");
  });

  it("reads worker logs of an endpoint, newest last", async () => {
    p.context.store.logs.append(endpointId, "wk_test", "first line");
    p.context.store.logs.append(endpointId, "wk_test", "second line");
    const r = await gqlOk<any>(p, "query($e: String!) { workerLogs(endpointId: $e, limit: 1) }", { e: endpointId });
    expect(r.workerLogs).toEqual(["[wk_test] second line"]);
    const missing = await gql(p, 'query { workerLogs(endpointId: "ep_nope") }');
    expect(missing.errors?.[0]?.message).toMatch(/not found/);
  });
});
