/**
 * svc:discover-stock-worker with the real Python helper: which folders are stock hosted-SDK workers
 * (the start call read by `ast`, at module level or under the `__main__` guard), the endpoint it makes
 * from svc.config.ts's stockWorker, what a Dockerfile gives and what it is warned about, and the
 * errors a wrong `stockWorker.file` gets.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SvcConfig } from "../../core/types.ts";
import { endpointsLine } from "../../plugins/analyze/index.ts";
import { discoverStockWorker } from "../../plugins/discover-stock-worker/index.ts";
import { readDockerfile } from "../../plugins/discover-stock-worker/dockerfile.ts";
import { buildUntilManifest, caught } from "./_front-half.ts";
import { captureLogger } from "./_helpers.ts";

const HANDLER = `import runpod

async def handler(job):
    return job["input"]

runpod.serverless.start({"handler": handler})
`;

function folder(files: Record<string, string>, name = "my-worker"): string {
  const root = join(mkdtempSync(join(tmpdir(), "svc-stock-")), name);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const build = (root: string, config: SvcConfig = {}, logger = captureLogger()) =>
  buildUntilManifest(root, { config, plugins: [discoverStockWorker()], logger });

describe("svc:discover-stock-worker", () => {
  it("makes one queue-based endpoint named after the folder, run by the SDK", async () => {
    const ctx = await build(folder({ "handler.py": HANDLER, "requirements.txt": "runpod==1.12.0\n" }));
    expect(ctx.endpoints).toHaveLength(1);
    expect(ctx.manifest!.endpoints["my-worker"]).toMatchObject({
      type: "QB",
      file: "handler.py",
      module: "handler",
      runtime: "runpod",
      hardware: { instanceIds: ["cpu3c-2-4"] },
      executionTimeoutMs: 600_000,
      functions: [{ name: "handler", isAsync: true, isGenerator: false, line: 3 }],
    });
    // `svc build --analyze` names what runs it
    expect(endpointsLine(ctx)).toBe("endpoints: my-worker (QB, stock hosted-SDK worker handler.py, found by svc:discover-stock-worker)");
  });

  it("finds src/handler.py and rp_handler.py, and a start under the __main__ guard through an alias", async () => {
    const guarded = 'from runpod import serverless as sls\n\ndef gen(job):\n    yield 1\n\nif __name__ == "__main__":\n    sls.start({"handler": gen})\n';
    const src = await build(folder({ "src/handler.py": guarded }));
    expect(src.manifest!.endpoints["my-worker"]).toMatchObject({
      file: "src/handler.py",
      module: "src.handler",
      functions: [{ name: "gen", isGenerator: true }],
    });
    const rp = await build(folder({ "rp_handler.py": HANDLER }));
    expect(rp.manifest!.endpoints["my-worker"]!.file).toBe("rp_handler.py");
  });

  it("takes the name, flavour, workers and timeouts from svc.config.ts", async () => {
    const root = folder({ "worker/main.py": HANDLER });
    const ctx = await build(root, {
      stockWorker: { file: "worker/main.py", name: "sd", cpu: "cpu5c-4-8", workers: [1, 4], idleTimeout: 30, executionTimeout: 90, env: { A: "1" } },
    });
    expect(ctx.manifest!.endpoints.sd).toMatchObject({
      file: "worker/main.py",
      hardware: { instanceIds: ["cpu5c-4-8"] },
      scaling: { workersMin: 1, workersMax: 4, idleTimeout: 30 },
      executionTimeoutMs: 90_000,
      env: { A: "1" },
    });
  });

  it("is not a stock worker when the start call runs only inside a function, nor when nothing calls it", async () => {
    const inside = 'import runpod\n\ndef main():\n    runpod.serverless.start({"handler": main})\n';
    expect((await caught(() => build(folder({ "handler.py": inside })))).code).toBe("NO_ENDPOINTS");
    const named = await caught(() => build(folder({ "w.py": inside }), { stockWorker: { file: "w.py" } }));
    expect(named.code).toBe("STOCK_WORKER_NOT_FOUND");
    expect((await caught(() => build(folder({ "handler.py": HANDLER }), { stockWorker: { file: "missing.py" } }))).code).toBe("STOCK_WORKER_NOT_FOUND");
  });

  it("leaves an @Endpoint app alone, saying so", async () => {
    const app = 'from svc import Endpoint\n\n@Endpoint(name="api")\ndef run(x: int) -> int:\n    return x\n';
    const logger = captureLogger();
    const ctx = await build(folder({ "app.py": app, "handler.py": HANDLER }), {}, logger);
    expect(ctx.endpoints.map((e) => [e.name, e.runtime])).toEqual([["api", undefined]]);
    expect(logger.warnings.join("\n")).toContain("handler.py calls runpod.serverless.start, but the app has @Endpoint functions");
  });

  it("honours a Dockerfile's base image kind, pip installs and ENV, and names the rest", async () => {
    const dockerfile = [
      "FROM runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04",
      "ENV HF_HOME=/runpod-volume MODE=fast",
      "RUN apt-get update && apt-get install -y ffmpeg \\",
      "    && pip install --no-cache-dir pillow==10.4.0 'numpy<2'",
      "RUN python -m pip install -r requirements.txt",
      "COPY handler.py /",
      "EXPOSE 8000",
      'CMD ["python", "-u", "/handler.py"]',
    ].join("\n");
    const logger = captureLogger();
    const ctx = await build(folder({ "handler.py": HANDLER, Dockerfile: dockerfile }), {}, logger);
    expect(ctx.manifest!.endpoints["my-worker"]).toMatchObject({
      hardware: { gpuIds: ["AMPERE_16"] },
      env: { HF_HOME: "/runpod-volume", MODE: "fast" },
      dependencies: ["pillow==10.4.0", "numpy<2"],
    });
    const warned = logger.warnings.join("\n");
    expect(warned).toContain("3: RUN apt-get update && apt-get install -y ffmpeg");
    expect(warned).toContain("7: EXPOSE 8000");
    expect(warned).not.toContain("COPY");
    expect(readDockerfile("FROM python:3.11-slim\nENV A 1 2\n")).toEqual({
      baseImage: "python:3.11-slim",
      gpuBase: false,
      packages: [],
      env: { A: "1 2" },
      ignored: [],
    });
  });
});
