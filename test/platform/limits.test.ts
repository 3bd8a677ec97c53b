/**
 * What a client sends or a function returns can never leave a job running, kill a worker or get
 * a 5xx: non-JSON numbers fail the job at once (runtime and platform side), integers beyond 2^53
 * stay exact, deep nesting is refused at the door with the documented limit, and the rate limits'
 * 429 says how to lift them locally; the worker protocol's batch take. Real platform on loopback,
 * real Python workers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { once } from "node:events";
import { request } from "node:http";
import { api, buildFixtureArtifact, deploy, gqlOk, startTestPlatform, waitFinal, waitFor, type TestPlatform } from "./_support.ts";
import { saveEnv } from "../_support/env.ts";
import { rawHeader, zeroBomb } from "./_raw-tar.ts";
import { MAX_JSON_DEPTH } from "../../platform/api/_json.ts";
import { resolveOptions } from "../../platform/options.ts";
import { CUT_MARKER, MAX_LOG_LINE } from "../../platform/store/logs.ts";

let p: TestPlatform;
let work: string;

beforeAll(async () => {
  p = await startTestPlatform({ rateLimits: { purge: { requests: 2, concurrent: 0 } } });
  const { endpoints } = await deploy(p, await buildFixtureArtifact(), [{ name: "work", workersMin: 1, workersMax: 1 }]);
  work = endpoints.work!.id;
}, 60_000);
afterAll(async () => p?.dispose());

/** A real worker's own variables (its credentials and URLs), read from its process. */
const workerEnvironment = (workerId: string): Record<string, string> => {
  const worker = p.context.supervisor.forEndpoint(work).find((w) => w.id === workerId)!;
  return Object.fromEntries(
    readFileSync(`/proc/${worker.proc!.pid}/environ`, "utf8")
      .split("\0")
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  );
};

const nested = (depth: number, leaf = "1") => "[".repeat(depth) + leaf + "]".repeat(depth);
const errorOf = (job: { error: string }) => JSON.parse(job.error) as { error_type: string; error_message: string };

/** The real worker running a 3 s job (so that a test can speak the worker protocol in its name meanwhile). */
async function busyWorker(): Promise<{ busy: string; running: { workerId: string } }> {
  const busy = (await api(p, "POST", `/v2/${work}/run`, { input: { op: "sleep", seconds: 3 } })).body.id as string;
  const running = await waitFor("the real worker to be busy", async () => {
    const s = (await api(p, "GET", `/v2/${work}/status/${busy}`)).body;
    return s.status === "IN_PROGRESS" ? s : undefined;
  });
  return { busy, running };
}

describe("results that are not JSON", () => {
  it.each(["nan", "inf", "-inf"])(
    "a function returning float('%s') fails its job at once with the reason",
    async (value) => {
      const t0 = Date.now();
      const r = await api(p, "POST", `/v2/${work}/runsync`, { input: { op: "float", value } });
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(r.body.status).toBe("FAILED");
      const error = errorOf(r.body);
      expect(error.error_type).toBe("OutputNotJSONError");
      expect(error.error_message).toMatch(/NaN and Infinity are not JSON/);
    },
    20_000,
  );

  it("a job-done body the platform cannot store (NaN from an older runtime) fails the job instead of leaving it running", async () => {
    const { busy: job, running } = await busyWorker();
    const env = workerEnvironment(running.workerId);
    const res = await fetch(env.SVC_JOB_DONE_URL!.replace("$ID", job), {
      method: "POST",
      headers: { authorization: `Bearer ${env.SVC_WORKER_TOKEN}`, "content-type": "application/json" },
      body: '{"output": {"value": NaN}}',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/not valid JSON/);
    const final = (await api(p, "GET", `/v2/${work}/status/${job}`)).body;
    expect(final.status).toBe("FAILED");
    expect(errorOf(final)).toMatchObject({ error_type: "JOB_OUTPUT_INVALID", error_message: expect.stringMatching(/could not be stored.*not valid JSON/) });
    // The worker's own report later is dropped (404) and the worker goes on serving.
    const next = await api(p, "POST", `/v2/${work}/runsync`, { input: { op: "echo", value: 1 } });
    expect(next.body).toMatchObject({ status: "COMPLETED", output: { echo: 1 } });
  }, 30_000);
});

describe("results nested deeper than the platform stores", () => {
  it("a function returning a list nested 300 deep fails its job at once naming the limit; the jobs beside it complete", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 12; i++)
      ids.push((await api(p, "POST", `/v2/${work}/run`, { input: i === 5 ? { op: "nested", value: 300 } : { op: "echo", value: i } })).body.id);
    const finals = await Promise.all(ids.map((id) => waitFinal(p, work, id, 20_000))); // far below the 600 s execution timeout
    for (const [i, job] of finals.entries()) {
      if (i === 5) continue;
      expect(job).toMatchObject({ status: "COMPLETED", output: { echo: i } });
    }
    expect(finals[5]!.status).toBe("FAILED");
    expect(errorOf(finals[5]!)).toMatchObject({
      error_type: "JOB_OUTPUT_INVALID",
      error_message: expect.stringContaining(`nested deeper than ${MAX_JSON_DEPTH} levels`),
    });
  }, 40_000);
});

describe("worker output", () => {
  it("a function printing 1 MB on one line leaves one log line, cut at the documented length with the marker", async () => {
    const r = await api(p, "POST", `/v2/${work}/runsync`, { input: { op: "print", value: 1_000_000 } });
    expect(r.body).toMatchObject({ status: "COMPLETED", output: { printed: 1_000_000 } });
    const long = await waitFor("the printed line in the worker logs", async () => {
      const { workerLogs } = await gqlOk<{ workerLogs: string[] }>(p, "query($e: String!) { workerLogs(endpointId: $e, limit: 50) }", { e: work });
      const printed = workerLogs.filter((line) => line.includes("xxxxxxxxxx"));
      return printed.length > 0 && printed;
    });
    expect(long).toHaveLength(1);
    expect(long[0]!.slice(long[0]!.indexOf("] ") + 2)).toBe("x".repeat(MAX_LOG_LINE) + CUT_MARKER); // after "[<worker id>] "
  }, 20_000);
});

describe("worker protocol", () => {
  it("a wrong worker token is refused naming the worker token, not the user's API key", async () => {
    const { busy, running } = await busyWorker();
    const env = workerEnvironment(running.workerId);
    for (const token of ["wkt_wrong", p.apiKey]) {
      const res = await fetch(`${env.SVC_JOB_TAKE_URL}?job_in_progress=1`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(401);
      const body = (await res.json()) as { error: string; code: string };
      expect(body.code).toBe("WORKER_TOKEN_INVALID");
      expect(body.error).toContain(`worker token for worker "${running.workerId}"`);
      expect(body.error).toContain("SVC_WORKER_TOKEN");
      expect(body.error).not.toMatch(/invalid API key|check PLATFORM_API_KEY/);
    }
    await waitFinal(p, work, busy, 10_000);
  }, 30_000);

  it("batch take (batch_size=N) hands up to N queued jobs in one answer, as a list", async () => {
    const { busy, running } = await busyWorker();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await api(p, "POST", `/v2/${work}/run`, { input: { op: "echo", value: i } })).body.id);
    const env = workerEnvironment(running.workerId);
    const auth = { authorization: `Bearer ${env.SVC_WORKER_TOKEN}`, "content-type": "application/json" };
    const res = await fetch(`${env.SVC_JOB_TAKE_URL}?job_in_progress=1&batch_size=5`, { headers: auth });
    const jobs = (await res.json()) as Array<{ id: string; input: unknown }>;
    expect(jobs.map((j) => j.id)).toEqual(ids); // in order, all three (fewer than asked: no wait for more)
    expect(jobs.map((j) => j.input)).toEqual([0, 1, 2].map((value) => ({ op: "echo", value })));
    for (const j of jobs) {
      const done = await fetch(env.SVC_JOB_DONE_URL!.replace("$ID", j.id), {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ output: { batch: j.id } }),
      });
      expect(done.status).toBe(200);
      expect((await api(p, "GET", `/v2/${work}/status/${j.id}`)).body).toMatchObject({ status: "COMPLETED", output: { batch: j.id } });
    }
    await waitFinal(p, work, busy, 10_000);
  }, 30_000);

  it("jobs-done takes several results in one request (one per line), names the gone ones and hands the next jobs (take=N)", async () => {
    const { busy, running } = await busyWorker();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await api(p, "POST", `/v2/${work}/run`, { input: { op: "echo", value: i } })).body.id);
    const env = workerEnvironment(running.workerId);
    expect(env.SVC_JOBS_DONE_URL).toMatch(/\/jobs-done$/);
    const auth = { authorization: `Bearer ${env.SVC_WORKER_TOKEN}`, "content-type": "application/x-ndjson" };
    const taken = (await (await fetch(`${env.SVC_JOB_TAKE_URL}?job_in_progress=1&batch_size=3`, { headers: auth })).json()) as Array<{ id: string }>;
    expect(taken.map((j) => j.id)).toEqual(ids.slice(0, 3));
    const lines = [
      `{"id":${JSON.stringify(taken[0]!.id)},"output":{"n":123456789012345678901234567890}}`,
      JSON.stringify({ id: taken[1]!.id, error: "it broke" }),
      JSON.stringify({ id: "job-never-taken", output: 1 }),
      `{"id": ${JSON.stringify(taken[2]!.id)}, "output": ${nested(MAX_JSON_DEPTH + 10)}}`, // spaced as Python's json.dumps writes it
    ];
    const res = await fetch(`${env.SVC_JOBS_DONE_URL}?take=5`, { method: "POST", headers: auth, body: lines.join("\n") });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { ok: boolean; gone: string[]; next: Array<{ id: string; input: unknown }> };
    expect(answer.gone).toEqual(["job-never-taken"]);
    expect(answer.next.map((j) => j.id)).toEqual(ids.slice(3)); // the two still queued, in order (fewer than asked: no wait)
    const text = await (await fetch(`${p.url}/v2/${work}/status/${taken[0]!.id}`, { headers: { authorization: `Bearer ${p.apiKey}` } })).text();
    expect(text.replace(/\s/g, "")).toContain('"output":{"n":123456789012345678901234567890}'); // the worker's text, exact
    expect((await api(p, "GET", `/v2/${work}/status/${taken[1]!.id}`)).body).toMatchObject({ status: "FAILED", error: "it broke" });
    const deep = (await api(p, "GET", `/v2/${work}/status/${taken[2]!.id}`)).body;
    expect(deep.status).toBe("FAILED"); // not storable: that job fails, the others stand
    expect(errorOf(deep).error_type).toBe("JOB_OUTPUT_INVALID");
    const rest = await fetch(env.SVC_JOBS_DONE_URL!, {
      method: "POST",
      headers: auth,
      body: answer.next.map((j) => JSON.stringify({ id: j.id, output: j.input })).join("\n"),
    });
    expect(((await rest.json()) as { gone: string[] }).gone).toEqual([]);
    for (const [i, j] of answer.next.entries())
      expect((await api(p, "GET", `/v2/${work}/status/${j.id}`)).body).toMatchObject({ status: "COMPLETED", output: { op: "echo", value: 3 + i } });
    await waitFinal(p, work, busy, 10_000);
    for (const id of [taken[1]!.id, taken[2]!.id]) {
      expect((await api(p, "POST", `/v2/${work}/retry/${id}`)).status).toBe(200); // the real worker runs them: no failed job left (health counts them below)
      expect((await waitFinal(p, work, id, 10_000)).status).toBe("COMPLETED");
    }
  }, 30_000);

  it("jobs-done whose results together are over its limit fails their jobs at once (none left IN_PROGRESS) and answers 413", async () => {
    const { busy, running } = await busyWorker();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await api(p, "POST", `/v2/${work}/run`, { input: { op: "echo", value: i } })).body.id);
    const env = workerEnvironment(running.workerId);
    const auth = { authorization: `Bearer ${env.SVC_WORKER_TOKEN}` };
    const taken = (await (await fetch(`${env.SVC_JOB_TAKE_URL}?job_in_progress=1&batch_size=3`, { headers: auth })).json()) as Array<{ id: string }>;
    expect(taken.map((j) => j.id)).toEqual(ids);
    // Three results of 70 MB each, streamed (210 MB: over the 200 MB one jobs-done request carries), spaced as json.dumps writes them.
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${env.SVC_JOBS_DONE_URL}`, { method: "POST", headers: { ...auth, "content-type": "application/x-ndjson" } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      const mb = Buffer.alloc(1024 * 1024, "x");
      void (async () => {
        for (const job of taken) {
          req.write(`{"id": ${JSON.stringify(job.id)}, "output": "`);
          for (let i = 0; i < 70; i++) if (!req.write(mb)) await once(req, "drain");
          req.write('"}\n');
        }
        req.end();
      })();
    });
    expect(status).toBe(413);
    for (const job of taken) {
      const view = (await api(p, "GET", `/v2/${work}/status/${job.id}`)).body;
      expect(view.status).toBe("FAILED");
      expect(errorOf(view)).toMatchObject({
        error_type: "JOB_OUTPUT_INVALID",
        error_message: expect.stringMatching(/Request body is over the 200(\.0)? MB limit/),
      });
    }
    await waitFinal(p, work, busy, 10_000);
    for (const job of taken) {
      expect((await api(p, "POST", `/v2/${work}/retry/${job.id}`)).status).toBe(200); // the real worker runs them: no failed job left (health counts them)
      expect((await waitFinal(p, work, job.id, 10_000)).status).toBe("COMPLETED");
    }
  }, 60_000);

  it("jobs-done with take=N&wait=1 and nothing queued waits for the next job, like a job-take long poll", async () => {
    const { busy, running } = await busyWorker();
    const env = workerEnvironment(running.workerId);
    const auth = { authorization: `Bearer ${env.SVC_WORKER_TOKEN}`, "content-type": "application/x-ndjson" };
    const waiting = fetch(`${env.SVC_JOBS_DONE_URL}?take=2&wait=1`, { method: "POST", headers: auth, body: "" });
    const answered = await Promise.race([waiting.then(() => true), new Promise((r) => setTimeout(() => r(false), 300))]);
    expect(answered).toBe(false); // nothing queued: it holds the answer
    const id = (await api(p, "POST", `/v2/${work}/run`, { input: { op: "echo", value: "late" } })).body.id as string;
    const answer = (await (await waiting).json()) as { gone: string[]; next: Array<{ id: string; input: unknown }> };
    expect(answer.next.map((j) => j.id)).toEqual([id]);
    expect((await api(p, "GET", `/v2/${work}/status/${id}`)).body.status).toBe("IN_PROGRESS");
    const done = await fetch(env.SVC_JOBS_DONE_URL!, { method: "POST", headers: auth, body: JSON.stringify({ id, output: answer.next[0]!.input }) });
    expect(((await done.json()) as { gone: string[] }).gone).toEqual([]);
    expect((await api(p, "GET", `/v2/${work}/status/${id}`)).body).toMatchObject({ status: "COMPLETED", output: { op: "echo", value: "late" } });
    await waitFinal(p, work, busy, 10_000);
  }, 30_000);
});

describe("numbers and nesting", () => {
  it("integers beyond 2^53 pass through input and output exactly", async () => {
    const big = "123456789012345678901234567890";
    const res = await fetch(`${p.url}/v2/${work}/runsync`, {
      method: "POST",
      headers: { authorization: `Bearer ${p.apiKey}`, "content-type": "application/json" },
      body: `{"input": {"op": "echo", "value": [${big}, 9007199254740993, -9007199254740993]}}`,
    });
    const text = await res.text();
    expect(JSON.parse(text).status).toBe("COMPLETED");
    expect(text.replace(/\s/g, "")).toContain(`"output":{"echo":[${big},9007199254740993,-9007199254740993]}`);
  }, 20_000);

  it.each([
    ["/run", 5000],
    ["/runsync", 5000],
    ["/run", 1500],
    ["/runsync", 1000],
  ])("%s with input nested %i deep: 400 naming the nesting limit", async (route, depth) => {
    const r = await api(p, "POST", `/v2/${work}${route}`, `{"input": {"op": "echo", "value": ${nested(depth)}}}`);
    expect(r.status).toBe(400);
    expect(r.body.error).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
  });

  it("input at the limit reaches the worker, which survives and echoes it", async () => {
    const value = nested(MAX_JSON_DEPTH - 3);
    const r = await api(p, "POST", `/v2/${work}/runsync`, `{"input": {"op": "echo", "value": ${value}}}`);
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("COMPLETED");
    expect(JSON.stringify(r.body.output.echo)).toBe(value);
    const health = (await api(p, "GET", `/v2/${work}/health`)).body;
    expect(health.jobs.failed).toBe(5); // the nested one and the four non-JSON results above; no worker died
  }, 20_000);

  it("GraphQL variables nested 5,000 deep are refused at the door too", async () => {
    const r = await api(p, "POST", "/graphql", `{"query": "query { myself { id } }", "variables": {"x": ${nested(5000)}}}`);
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain("nesting limit");
  });
});

describe("rate limits", () => {
  it("a 429 names the limit and how to lift it locally", async () => {
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await api(p, "POST", `/v2/${work}/purge-queue`));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429]);
    expect(answers[2]!.body.error).toContain("over the limit of 2 requests per 10 s");
    expect(answers[2]!.body.error).toContain("svc platform start --no-rate-limits");
    expect(answers[2]!.body.error).toContain("SVC_PLATFORM_RATE_LIMITS=off");
  });

  it("keeps the hosted limits by default; SVC_PLATFORM_RATE_LIMITS=off turns them off", () => {
    const restore = saveEnv("SVC_PLATFORM_RATE_LIMITS");
    try {
      delete process.env.SVC_PLATFORM_RATE_LIMITS;
      expect(resolveOptions({ dataDir: "x" }).rateLimits).toMatchObject({ runsync: { requests: 2000, concurrent: 400 } });
      process.env.SVC_PLATFORM_RATE_LIMITS = "off";
      expect(resolveOptions({ dataDir: "x" }).rateLimits).toBe(false);
      expect(resolveOptions({ dataDir: "x", rateLimits: {} }).rateLimits).not.toBe(false); // explicit options win
    } finally {
      restore();
    }
  });
});

describe("artifact bombs", () => {
  it("an upload that expands to 2 GiB is refused at its entry, naming no platform path; the platform goes on", async () => {
    const bomb = zeroBomb(rawHeader({ name: "app/zeros.bin" }, 2 * 1024 ** 3), 2);
    const { createApp } = await gqlOk<{ createApp: { id: string } }>(p, 'mutation { createApp(name: "bomb") { id } }');
    const { prepareArtifactUpload: prep } = await gqlOk<{ prepareArtifactUpload: { uploadUrl: string } }>(
      p,
      "mutation($a: String!, $s: Int!) { prepareArtifactUpload(appId: $a, size: $s) { uploadUrl } }",
      {
        a: createApp.id,
        s: bomb.length,
      },
    );
    const res = await fetch(prep.uploadUrl, { method: "PUT", headers: { "content-type": "application/gzip" }, body: new Uint8Array(bomb) });
    const body = (await res.json()) as { error: string };
    expect(res.status).toBe(400);
    expect(body.error).toContain('Refusing to unpack the artifact at entry "app/zeros.bin": the artifact unpacks to more than 1.5 GB');
    expect(body.error).not.toContain(p.dataDir);
    expect((await api(p, "GET", `/v2/${work}/health`)).status).toBe(200);
  }, 30_000);
});

describe("bodies that are not UTF-8", () => {
  /** `{"input":{"s\xff":"k"}}` as bytes: a key with a byte that is not UTF-8. */
  const invalid = Buffer.concat([Buffer.from('{"input":{"s'), Buffer.from([0xff]), Buffer.from('":"k"}}')]);
  const post = (path: string, body: Buffer, headers: Record<string, string> = {}) =>
    fetch(`${p.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${p.apiKey}`, "content-type": "application/json", ...headers },
      body: new Uint8Array(body),
    });

  it.each(["run", "runsync"])("/%s answers 400 BODY_NOT_UTF8 and queues nothing (nothing is silently changed)", async (route) => {
    const before = (await api(p, "GET", `/v2/${work}/health`)).body.jobs;
    const res = await post(`/v2/${work}/${route}`, invalid);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "BODY_NOT_UTF8", error: expect.stringContaining("not valid UTF-8") });
    const after = (await api(p, "GET", `/v2/${work}/health`)).body.jobs;
    expect(after.completed + after.failed + after.inQueue + after.inProgress).toBe(before.completed + before.failed + before.inQueue + before.inProgress);
  });

  it("chunked bodies (no content-length), GraphQL and a worker's job-done are checked the same way", async () => {
    const chunked = await fetch(`${p.url}/v2/${work}/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${p.apiKey}`, "content-type": "application/json" },
      body: new ReadableStream({ start: (c) => (c.enqueue(new Uint8Array(invalid)), c.close()) }),
      duplex: "half",
    } as RequestInit);
    expect(chunked.status).toBe(400);
    expect(((await chunked.json()) as { code: string }).code).toBe("BODY_NOT_UTF8");
    const graphql = await post(
      "/graphql",
      Buffer.concat([Buffer.from('{"query":"{ myself { id } }","variables":{"a":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}')]),
    );
    expect(graphql.status).toBe(400);
    const { busy: job, running } = await busyWorker();
    const env = workerEnvironment(running.workerId);
    const done = await fetch(env.SVC_JOB_DONE_URL!.replace("$ID", job), {
      method: "POST",
      headers: { authorization: `Bearer ${env.SVC_WORKER_TOKEN}`, "content-type": "application/json" },
      body: new Uint8Array(Buffer.concat([Buffer.from('{"output":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')])), // a UTF-16 surrogate, not UTF-8
    });
    expect(done.status).toBe(400);
    expect(((await done.json()) as { code: string }).code).toBe("BODY_NOT_UTF8");
    expect((await waitFinal(p, work, job, 10_000)).status).toBe("COMPLETED"); // the worker's own result stands
  }, 30_000);

  it("valid UTF-8 beyond ASCII is accepted as sent", async () => {
    const r = await api(p, "POST", `/v2/${work}/runsync`, { input: { op: "echo", value: { clé: "日本 🎉" } } });
    expect(r.body).toMatchObject({ status: "COMPLETED", output: { echo: { clé: "日本 🎉" } } });
  });
});
