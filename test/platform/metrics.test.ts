/**
 * `GET /metrics` (docs/observability.md) scraped by a real Prometheus (Debian's `prometheus`,
 * started here on a free port with its own config and storage): after N jobs, PromQL over its HTTP
 * API counts N completed jobs for the endpoint, and the queue-delay and execution histograms and
 * the route's request counter count N as well. The route is behind the platform's key: none is 401,
 * a worker's key 403.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, buildFixtureArtifact, deploy, startTestPlatform, waitFor, type TestPlatform } from "./_support.ts";
import { PROMETHEUS, requireTool, skipWithout } from "../_support/tools.ts";

const N = 7;

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

let p: TestPlatform;
let endpointId: string;
let prometheus: ChildProcess | undefined;
let promUrl: string;
let promDir: string;

beforeAll(async () => {
  p = await startTestPlatform();
  // idleTimeout: the worker stays live until the queries below read svc_workers (the default 5 s idle ran
  // out first once, on a loaded CI machine, while Prometheus caught up with the jobs)
  const deployed = await deploy(p, await buildFixtureArtifact(), [{ name: "work", workersMax: 1, idleTimeout: 600 }]);
  endpointId = deployed.endpoints.work!.id;
}, 120_000);

afterAll(async () => {
  prometheus?.kill("SIGTERM");
  await p?.dispose();
  if (promDir) await rm(promDir, { recursive: true, force: true });
});

describe("GET /metrics", () => {
  it("is Prometheus text behind the platform's key; a worker's key is refused", async () => {
    const none = await fetch(`${p.url}/metrics`);
    expect(none.status).toBe(401);
    const endpoint = p.context.store.endpoints.get(endpointId)!;
    const workerKey = p.context.workerKeys.keyFor(endpoint);
    const worker = await fetch(`${p.url}/metrics`, { headers: { authorization: `Bearer ${workerKey}` } });
    expect(worker.status).toBe(403);
    const ok = await fetch(`${p.url}/metrics`, { headers: { authorization: `Bearer ${p.apiKey}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await ok.text();
    for (const name of ["svc_jobs_total", "svc_job_queue_delay_seconds", "svc_queue_depth", "svc_workers", "svc_http_requests_total"])
      expect(text).toContain(`# TYPE ${name} `);
    expect(text).not.toMatch(/job_id|worker_id|wk_[a-z0-9]/i); // bounded labels: never a job's or worker's id
  });
});

describe.skipIf(skipWithout(PROMETHEUS))("a real Prometheus scraping the platform", () => {
  beforeAll(async () => {
    const bin = requireTool(PROMETHEUS, "prometheus", "apt-get install prometheus");
    promDir = await mkdtemp(join(tmpdir(), "svc-prometheus-"));
    const target = new URL(p.url).host;
    await writeFile(
      join(promDir, "prometheus.yml"),
      [
        "global: { scrape_interval: 1s, evaluation_interval: 1s }",
        "scrape_configs:",
        "  - job_name: svc",
        "    metrics_path: /metrics",
        `    authorization: { type: Bearer, credentials: ${JSON.stringify(p.apiKey)} }`,
        `    static_configs: [{ targets: [${JSON.stringify(target)}] }]`,
        "",
      ].join("\n"),
    );
    const port = await freePort();
    promUrl = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      bin,
      [`--config.file=${join(promDir, "prometheus.yml")}`, `--storage.tsdb.path=${join(promDir, "data")}`, `--web.listen-address=127.0.0.1:${port}`],
      { stdio: "ignore" },
    );
    await waitFor("prometheus to be ready", async () => (await fetch(`${promUrl}/-/ready`).catch(() => undefined))?.ok, 60_000, 200);
  }, 90_000);

  /** The value of a PromQL query that answers one sample (undefined while it has none). */
  const query = async (promql: string): Promise<number | undefined> => {
    const r = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(promql)}`);
    const body = (await r.json()) as { data: { result: Array<{ value: [number, string] }> } };
    const sample = body.data.result[0];
    return sample ? Number(sample.value[1]) : undefined;
  };

  it(`counts ${N} jobs for the endpoint, and the histograms count them too`, async () => {
    for (let i = 0; i < N; i++) {
      const r = await api(p, "POST", `/v2/${endpointId}/runsync`, { input: { op: "echo", value: i } });
      expect(r.body.status).toBe("COMPLETED");
    }
    const at = `endpoint="work"`;
    await waitFor(`prometheus to see ${N} completed jobs`, async () => (await query(`sum(svc_jobs_total{${at},status="COMPLETED"})`)) === N, 30_000, 500);
    expect(await query(`sum(svc_job_execution_seconds_count{${at}})`)).toBe(N);
    expect(await query(`sum(svc_job_queue_delay_seconds_count{${at}})`)).toBe(N);
    expect(await query(`sum(svc_job_execution_seconds_bucket{${at},le="+Inf"})`)).toBe(N);
    expect(await query(`sum(svc_http_requests_total{route="/v2/:endpoint/runsync",code="200"})`)).toBe(N);
    expect(await query(`sum(svc_worker_cold_start_seconds_count{${at}})`)).toBeGreaterThanOrEqual(1);
    expect(await query(`sum(svc_workers{${at}})`)).toBeGreaterThanOrEqual(1);
    expect(await query(`up{job="svc"}`)).toBe(1);
  }, 90_000);
});
