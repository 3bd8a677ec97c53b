/**
 * The Ray backend's settings without a cluster: the env form of `--workers ray --ray-address`, what
 * a worker asks Ray for from its endpoint's flavour, and a platform refusing to start when the
 * address does not answer as Ray's dashboard (a real closed port on loopback). The backend against
 * a real Ray cluster: ray-workers.test.ts.
 */
import { createServer } from "node:http";
import { describe, expect, it } from "vitest";
import { workersFromEnv } from "../../platform/workers-option.ts";
import { flavourResources } from "../../platform/workers/backends/resources.ts";
import { freePort } from "../../platform/_free-port.ts";
import { startTestPlatform } from "./_support.ts";

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
