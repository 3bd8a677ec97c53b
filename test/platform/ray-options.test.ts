/**
 * The Ray backend's settings without a cluster: the env form of `--workers ray --ray-address`, what
 * a worker asks Ray for from its endpoint's flavour, and a platform refusing to start when the
 * address does not answer as Ray's dashboard (a real closed port on loopback), and a stop call that
 * fails asked again (a stand-in for Ray's head on loopback: a real head fails it only when
 * overloaded). The backend against a real Ray cluster: ray-workers.test.ts.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { workersFromEnv } from "../../platform/workers-option.ts";
import { flavourResources } from "../../platform/workers/backends/resources.ts";
import { freePort } from "../../platform/_free-port.ts";
import { connectRay } from "../../platform/workers/backends/ray.ts";
import type { WorkerInfo } from "../../platform/workers/worker-info.ts";
import { startTestPlatform, waitFor } from "./_support.ts";

describe("--workers and --ray-address (env form)", () => {
  it("is local by default and ray with an address", () => {
    expect(workersFromEnv({})).toEqual({ backend: "local" });
    expect(workersFromEnv({ SVC_WORKERS: "ray", SVC_RAY_ADDRESS: "http://head:8265", SVC_RAY_VOLUMES: "/mnt/svc" })).toMatchObject({
      backend: "ray",
      address: "http://head:8265",
      volumesRoot: "/mnt/svc",
    });
  });

  it("refuses an unknown backend and ray without an address, saying what to give", () => {
    expect(() => workersFromEnv({ SVC_WORKERS: "k8s" })).toThrow(
      expect.objectContaining({ code: "CLI_USAGE", message: expect.stringContaining('takes local or ray, not "k8s"') }),
    );
    expect(() => workersFromEnv({ SVC_WORKERS: "ray" })).toThrow(
      expect.objectContaining({ code: "CLI_USAGE", message: expect.stringContaining("--ray-address http://<head>:8265") }),
    );
  });
});

describe("what a worker asks Ray for", () => {
  it("takes a CPU flavour's vCPUs and memory, and a GPU endpoint's gpuCount", () => {
    expect(flavourResources({ gpuIds: null, gpuCount: null, instanceIds: ["cpu3c-2-4"] })).toEqual({ cpus: 2, gpus: 0, memoryBytes: 4 * 2 ** 30 });
    expect(flavourResources({ gpuIds: "AMPERE_80", gpuCount: 2, instanceIds: null })).toEqual({ cpus: 1, gpus: 2, memoryBytes: 0 });
    expect(flavourResources({ gpuIds: null, gpuCount: null, instanceIds: ["custom"] })).toEqual({ cpus: 1, gpus: 0, memoryBytes: 0 });
  });
});

describe("a platform with --workers ray", () => {
  it("does not start when the address is not Ray's dashboard (RAY_UNREACHABLE)", async () => {
    const closed = await freePort();
    await expect(startTestPlatform({ workers: { backend: "ray", address: `http://127.0.0.1:${closed}` } })).rejects.toMatchObject({ code: "RAY_UNREACHABLE" });
    const notRay = createServer((_, res) => res.writeHead(404).end("nope")).listen(0, "127.0.0.1");
    await new Promise((r) => notRay.once("listening", r));
    try {
      const port = (notRay.address() as { port: number }).port;
      await expect(startTestPlatform({ workers: { backend: "ray", address: `http://127.0.0.1:${port}` } })).rejects.toMatchObject({
        code: "RAY_UNREACHABLE",
        message: expect.stringContaining("GET /api/version answered 404"),
      });
    } finally {
      notRay.close();
    }
  });
});

describe("stopping a Ray worker", () => {
  it("asks Ray again at the next poll when a stop call fails (a busy head), until the job has ended", async () => {
    // Ray's Jobs API as far as one job goes, its first stop call answered 500: a fault a real head shows only when overloaded
    let status = "RUNNING";
    const stops: number[] = [];
    const head = createServer((req, res) => {
      const send = (code: number, body: unknown) => res.writeHead(code, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (req.url === "/api/version") return send(200, { ray_version: "2.x" });
      if (req.url === "/api/jobs/" && req.method === "GET") return send(200, []);
      if (req.url === "/api/jobs/" && req.method === "POST") return req.resume().on("end", () => send(200, { submission_id: "svc-wk_stop" }));
      if (req.url === "/api/jobs/svc-wk_stop") return send(200, { status, driver_node_id: "node-1", driver_exit_code: null });
      if (req.url === "/api/jobs/svc-wk_stop/stop") {
        stops.push(Date.now());
        if (stops.length === 1) return send(500, { error: "busy" });
        status = "STOPPED";
        return send(200, { stopped: true });
      }
      send(404, {});
    });
    await new Promise<void>((resolve) => head.listen(0, "127.0.0.1", resolve));
    const { port } = head.address() as AddressInfo;
    const ray = await connectRay({ address: `http://127.0.0.1:${port}`, pollMs: 50 }, () => "http://127.0.0.1:1", {
      dataDir: "/nonexistent",
      log: () => {},
    });
    const logs: string[] = [];
    let exited: string | undefined;
    const w = { id: "wk_stop" } as WorkerInfo;
    const plan = {
      ticket: "t",
      asks: { cpus: 1, gpus: 0, memoryBytes: 0 },
      workerId: w.id,
      target: { build: { id: "b", sha256: "s" } },
      endpoint: { id: "ep" },
    };
    await ray.start(plan as never, w, {
      log: (line) => logs.push(line),
      output: () => {},
      started: () => {},
      exited: (how) => (exited = how),
      failed: () => {},
      gone: () => false,
    });
    try {
      await waitFor("the worker placed on its node", () => w.remote?.node === "node-1", 5_000);
      w.remote!.signal("SIGKILL");
      await waitFor("the job ended after a second stop", () => exited, 5_000);
      expect(stops).toHaveLength(2);
      expect(exited).toContain("Ray job STOPPED");
      expect(logs.some((line) => line.includes("stopping Ray job svc-wk_stop failed (asked again at the next poll)"))).toBe(true);
    } finally {
      await ray.close();
      head.close();
    }
  });
});
