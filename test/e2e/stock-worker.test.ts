/**
 * A stock hosted-platform worker, unmodified (docs/deploy.md, "Stock workers"): folders holding only
 * a handler.py that calls `runpod.serverless.start(...)` and a requirements.txt pinning the hosted SDK
 * (the real `runpod` from PyPI, installed by the build's own pip into the artifact, as a user's
 * deploy does), deployed with `svc deploy`'s code to a real embedded platform. The SDK runs as the
 * worker process against the stock routes; the hosted platform's own JS client (npm runpod-sdk) and
 * Python client (the same `runpod`, from the build's site-packages) call the endpoints.
 *
 * One deploy per folder serves every check. The build's dependency cache lives in the machine's temp
 * folder across runs (pip runs on the first run only). SDK_VERSIONS: 1.12.0 is the newest 1.x on
 * PyPI today (so it is both versions the issue names); add the next one here when it comes out.
 */
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import runpodSdk from "runpod-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { createPlatformClient } from "../../core/client/index.ts";
import { startDevServer } from "../../dev/index.ts";
import { captureLogger, FIXTURES, pypiReachable } from "../plugins/_helpers.ts";
import { startTestPlatform, type TestPlatform } from "../platform/_support.ts";

// SVC_STOCK_SDK_VERSIONS=1.11.0,1.12.0 runs the same checks on other versions.
const SDK_VERSIONS = process.env.SVC_STOCK_SDK_VERSIONS?.split(",") ?? ["1.12.0"];
// biome-ignore lint/suspicious/noExplicitAny: the platform's JSON answers, read field by field in the checks
type Json = Record<string, any>;
const online = await pypiReachable();
if (!online) console.warn("the stock worker test is skipped: https://pypi.org did not answer");

/** A fixture copied to a folder of its own, its `.svc/cache` the shared, lasting one. */
async function stage(fixture: string, version: string, parent: string): Promise<string> {
  const root = join(parent, fixture);
  await cp(join(FIXTURES, fixture), root, { recursive: true });
  await writeFile(join(root, "requirements.txt"), `runpod==${version}\n`);
  const cache = join(tmpdir(), "svc-stock-worker-cache");
  await mkdir(cache, { recursive: true });
  await mkdir(join(root, ".svc"), { recursive: true });
  await symlink(cache, join(root, ".svc", "cache"));
  return root;
}

const until = async <T>(what: string, fn: () => Promise<T | undefined>, ms = 60_000): Promise<T> => {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
};

const runPython = (script: string, env: NodeJS.ProcessEnv) =>
  new Promise<{ code: number; output: string }>((resolve) => {
    execFile("python3", ["-c", script], { env, timeout: 120_000, maxBuffer: 8 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error ? 1 : 0, output: `${stdout}${stderr}` }),
    );
  });

/** The hosted Python client's calls: runsync, run + status, a stream, a cancel. */
const PYTHON_CLIENT = `
import json, os, time
import runpod
runpod.api_key = os.environ["SVC_TEST_KEY"]
main = runpod.Endpoint(os.environ["SVC_TEST_MAIN"])
stream = runpod.Endpoint(os.environ["SVC_TEST_STREAM"])
out = {"runsync": main.run_sync({"op": "echo", "value": "py"}, timeout=120)}
job = main.run({"op": "echo", "value": 2})
out["output"] = job.output(timeout=120)
out["status"] = job.status()
chunks = stream.run({"chunks": 4})
out["stream"] = list(chunks.stream())
slow = main.run({"op": "sleep", "seconds": 30})
while slow.status() == "IN_QUEUE":
    time.sleep(0.1)
out["cancel"] = slow.cancel()
print("RESULT " + json.dumps(out))
`;

describe.runIf(online).each(SDK_VERSIONS)("a stock worker on runpod==%s, unmodified", (version) => {
  let platform: TestPlatform;
  let parent: string;
  let main: string;
  let streamId: string;
  let sitePackages: string;
  let sdk: ReturnType<ReturnType<typeof runpodSdk>["endpoint"]> & object;
  let streamSdk: typeof sdk;
  const url = (path: string) => `${platform.url}${path}`;
  const get = async (path: string, key = platform.apiKey) => {
    const res = await fetch(url(path), { headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, body: (await res.json().catch(() => null)) as Json };
  };
  const post = async (path: string, body: unknown, key = platform.apiKey) => {
    const res = await fetch(url(path), {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json().catch(() => null)) as Json };
  };
  const finalStatus = (endpoint: string, id: string) =>
    until(`job ${id} to end`, async () => {
      const s = await get(`/v2/${endpoint}/status/${id}`);
      return ["IN_QUEUE", "IN_PROGRESS"].includes(s.body.status) ? undefined : s.body;
    });

  beforeAll(async () => {
    parent = await mkdtemp(join(tmpdir(), "svc-stock-worker-"));
    platform = await startTestPlatform({ log: () => {} });
    const client = createPlatformClient(platform);
    const deployed: Record<string, string> = {};
    for (const fixture of ["stock-worker", "stock-worker-stream"]) {
      const root = await stage(fixture, version, parent);
      const logger = captureLogger();
      const { ctx, summary } = await runDeploy({ root, client, logger });
      expect(ctx.endpoints.map((e) => [e.name, e.runtime, e.type])).toEqual([[fixture, "runpod", "QB"]]);
      deployed[fixture] = summary.endpoints[0]!.id;
      sitePackages = ctx.depsDir!;
    }
    main = deployed["stock-worker"]!;
    streamId = deployed["stock-worker-stream"]!;
    const api = runpodSdk(platform.apiKey, { baseUrl: `${platform.url}/v2` });
    sdk = api.endpoint(main)!;
    streamSdk = api.endpoint(streamId)!;
  }, 600_000);
  afterAll(async () => {
    await platform?.dispose();
    if (parent) await rm(parent, { recursive: true, force: true });
  });

  it("answers runsync with the handler's output, from a worker the SDK runs", { timeout: 120_000 }, async () => {
    const job = await sdk.runSync({ input: { op: "echo", value: [1, "two"] } }, 90_000);
    expect(job.status, JSON.stringify(job)).toBe("COMPLETED");
    expect(job.output).toEqual({ echo: [1, "two"], worker: expect.stringMatching(/^wk_/) });
  });

  it("shows IN_PROGRESS with the handler's progress_update while it runs, then COMPLETED", { timeout: 120_000 }, async () => {
    const { id } = await sdk.run({ input: { op: "progress", hold: 3 } });
    const progress = await until("the progress update", async () => {
      const s = await sdk.status(id);
      return s.status === "IN_PROGRESS" && (s as { output?: unknown }).output ? s : undefined;
    });
    expect((progress as { output?: unknown }).output).toEqual({ step: 1, of: 2 });
    expect(await finalStatus(main, id)).toMatchObject({ status: "COMPLETED", output: { done: true } });
  });

  it("streams a generator handler's chunks in order, the aggregate as its output", { timeout: 120_000 }, async () => {
    const { id } = await streamSdk.run({ input: { chunks: 5 } });
    const chunks: unknown[] = [];
    for await (const chunk of streamSdk.stream(id)) chunks.push(chunk.output);
    expect(chunks).toEqual([0, 1, 2, 3, 4].map((i) => ({ chunk: i })));
    expect(await finalStatus(streamId, id)).toMatchObject({ status: "COMPLETED", output: [0, 1, 2, 3, 4].map((i) => ({ chunk: i })) });
  });

  it("fails a raising handler's job with the SDK's error fields", { timeout: 120_000 }, async () => {
    const job = await sdk.runSync({ input: { op: "raise" } }, 90_000);
    expect(job.status).toBe("FAILED");
    const error = JSON.parse((job as unknown as { error: string }).error);
    expect(error).toMatchObject({
      error_type: "<class 'ValueError'>",
      error_message: "the handler raised on purpose",
      error_traceback: expect.stringContaining("raise ValueError"),
      runpod_version: version,
      worker_id: expect.stringMatching(/^wk_/),
    });
    const refused = await sdk.runSync({ input: { op: "nope" } }, 90_000); // a returned {"error": ...}
    expect(refused).toMatchObject({ status: "FAILED", error: "unknown op 'nope'" });
  });

  it("runs several jobs at once in one worker (concurrency_modifier 3)", { timeout: 120_000 }, async () => {
    const ids = await Promise.all([1, 2, 3].map(async () => (await post(`/v2/${main}/run`, { input: { op: "sleep", seconds: 2 } })).body.id as string));
    const done = await Promise.all(ids.map((id) => finalStatus(main, id)));
    for (const job of done) expect(job.status).toBe("COMPLETED");
    const outputs = done.map((job) => job.output as { start: number; end: number; pid: number });
    expect(new Set(outputs.map((o) => o.pid)).size).toBe(1);
    expect(new Set(done.map((job) => job.workerId)).size).toBe(1);
    // every pair overlapped: each started before the others ended
    for (const a of outputs) for (const b of outputs) expect(a.start).toBeLessThan(b.end);
  });

  it("cancels a running job: CANCELLED, and the worker goes on serving", { timeout: 120_000 }, async () => {
    const { id } = await sdk.run({ input: { op: "sleep", seconds: 60 } });
    await until("the job to run", async () => ((await sdk.status(id)).status === "IN_PROGRESS" ? true : undefined));
    await sdk.cancel(id);
    expect((await get(`/v2/${main}/status/${id}`)).body.status).toBe("CANCELLED");
    const next = await sdk.runSync({ input: { op: "echo", value: "after" } }, 90_000);
    expect(next).toMatchObject({ status: "COMPLETED", output: { echo: "after" } });
  });

  it("times a job out at its execution timeout: TIMED_OUT", { timeout: 120_000 }, async () => {
    const { body } = await post(`/v2/${main}/run`, { input: { op: "sleep", seconds: 60 }, policy: { executionTimeout: 5000 } });
    const ended = await finalStatus(main, body.id);
    expect(ended.status).toBe("TIMED_OUT");
    expect(ended.executionTime).toBeLessThan(20_000);
  });

  it("refuses the worker's own credential on another app's routes and other workers' routes", { timeout: 120_000 }, async () => {
    const job = await sdk.runSync({ input: { op: "credential" } }, 90_000);
    const key = (job.output as { key: string }).key;
    expect(key).toMatch(/^wkt_/);
    expect(key).not.toBe(platform.apiKey);
    expect((await post(`/v2/${streamId}/run`, { input: {} }, key)).status).toBe(401);
    expect((await post(`/v2/${main}/run`, { input: {} }, key)).status).toBe(401);
    const streamJob = await streamSdk.runSync({ input: { chunks: 1 } }, 90_000);
    const otherWorker = (streamJob as { workerId?: string }).workerId!;
    expect(otherWorker).toMatch(/^wk_/);
    expect((await get(`/v2/_worker/${otherWorker}/stock/job-take/${otherWorker}?sdk=1&job_in_progress=0`, key)).status).toBe(401);
  });

  it("is called by the hosted Python client: runsync, run + status, stream, cancel", { timeout: 180_000 }, async () => {
    const result = await runPython(PYTHON_CLIENT, {
      ...process.env,
      PYTHONPATH: sitePackages,
      HOME: parent,
      RUNPOD_ENDPOINT_BASE_URL: `${platform.url}/v2`,
      SVC_TEST_KEY: platform.apiKey,
      SVC_TEST_MAIN: main,
      SVC_TEST_STREAM: streamId,
    });
    const line = result.output.split("\n").find((l) => l.startsWith("RESULT "));
    expect(line, result.output).toBeDefined();
    const out = JSON.parse(line!.slice("RESULT ".length));
    expect(out.runsync).toEqual({ echo: "py", worker: expect.stringMatching(/^wk_/) });
    expect(out.output).toEqual({ echo: 2, worker: expect.stringMatching(/^wk_/) });
    expect(out.status).toBe("COMPLETED");
    expect(out.stream).toEqual([0, 1, 2, 3].map((i) => ({ chunk: i })));
    expect(out.cancel).toMatchObject({ status: "CANCELLED" });
  });

  it("hands the next job to a fresh worker after a handler returns refresh_worker", { timeout: 180_000 }, async () => {
    const refreshed = await sdk.runSync({ input: { op: "refresh" } }, 90_000);
    expect(refreshed).toMatchObject({ status: "COMPLETED", output: { worker: expect.stringMatching(/^wk_/) } });
    expect(refreshed.output).not.toHaveProperty("refresh_worker");
    const next = await sdk.runSync({ input: { op: "echo", value: "fresh" } }, 150_000);
    expect(next).toMatchObject({ status: "COMPLETED", output: { echo: "fresh" } });
    expect((next.output as { worker: string }).worker).not.toBe((refreshed.output as { worker: string }).worker);
  });

  it("scales to zero when idle and back for the next job", { timeout: 120_000 }, async () => {
    await until(
      "no workers",
      async () => {
        const health = await get(`/v2/${main}/health`);
        const w = health.body.workers as Record<string, number>;
        return Object.values(w).every((n) => n === 0) ? true : undefined;
      },
      90_000,
    );
    const job = await sdk.runSync({ input: { op: "echo", value: "again" } }, 90_000);
    expect(job).toMatchObject({ status: "COMPLETED", output: { echo: "again" } });
  });

  it("is served by `svc run` (the dev server) at /handler/runsync, and a change to handler.py reloads it", { timeout: 420_000 }, async () => {
    const root = await stage("stock-worker", version, join(parent, "dev"));
    const server = await startDevServer({ root, client: createPlatformClient(platform), port: 0, logger: captureLogger(), debounceMs: 100 });
    try {
      const runsync = async (value: string) => {
        const res = await fetch(`${server.url}/handler/runsync`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ input: { op: "echo", value } }),
        });
        return (await res.json()) as Json;
      };
      expect(await runsync("dev")).toMatchObject({ status: "COMPLETED", output: { echo: "dev" } });
      const handler = join(root, "handler.py");
      await writeFile(handler, (await readFile(handler, "utf8")).replace('{"echo": data.get("value")', '{"echo": "reloaded " + data.get("value")'));
      await until(
        "the reloaded handler",
        async () => {
          const job = await runsync("dev");
          return job.output?.echo === "reloaded dev" ? true : undefined;
        },
        300_000,
      );
    } finally {
      await server.close();
    }
  });
});
