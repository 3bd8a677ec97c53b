/**
 * What torch says about CUDA inside a GPU endpoint's worker on this machine (issue 20; docs/platform.md,
 * "GPUs"): a one-function app with `gpu=` is deployed with the real CLI (`svc deploy`) to a fresh
 * embedded platform in a temporary folder, called through runsync, and its answer printed:
 * torch.cuda.is_available(), the device count and name, CUDA_VISIBLE_DEVICES, a matmul on the GPU.
 * Then `svc platform status` (the GPUs and their holders) and the platform's GPU lines. On a machine
 * without GPUs it shows the CPU path (the once-only line, is_available False).
 *
 *   npx tsx bench/gpu/cuda-in-worker.ts        (SVC_PYTHON_GPU picks the worker's Python, as on the platform)
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const BIN = new URL("../../bin/svc.mjs", import.meta.url).pathname;

const APP = `"""One GPU function: what CUDA looks like from inside the worker."""
import os

from svc import Endpoint, GpuGroup


@Endpoint(name="cuda", gpu=GpuGroup.ADA_24, workers=(0, 1))
def cuda() -> dict:
    import torch

    out = {"torch": torch.__version__, "available": torch.cuda.is_available(), "visible": os.environ.get("CUDA_VISIBLE_DEVICES")}
    if out["available"]:
        out["count"] = torch.cuda.device_count()
        out["name"] = torch.cuda.get_device_name(0)
        a = torch.ones(1024, 1024, device="cuda")
        out["matmul"] = float((a @ a).sum().item())  # 1024 ** 3
    return out
`;

const svc = (args: string[], cwd: string, env: NodeJS.ProcessEnv) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(process.execPath, [BIN, ...args], { cwd, env, timeout: 600_000, maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );

const root = await mkdtemp(join(tmpdir(), "svc-gpu-check-"));
const platformDir = join(root, "platform");
const app = join(root, "app");
const env = { ...process.env, NO_COLOR: "1", SVC_PLATFORM_DIR: platformDir, PLATFORM_API_URL: "", PLATFORM_API_KEY: "" };
try {
  await mkdir(app);
  await writeFile(join(app, "main.py"), APP);
  await writeFile(join(app, "svc.config.ts"), 'export default { app: "gpu-check" };\n');
  const platform = await svc(["platform", "start", "--detach", "--port", "0", "--dir", platformDir], app, env); // any free port
  if (platform.code !== 0) throw new Error(`svc platform start failed:\n${platform.stdout}${platform.stderr}`);
  const deployed = await svc(["deploy", "--quiet"], app, env);
  if (deployed.code !== 0) throw new Error(`svc deploy failed:\n${deployed.stdout}${deployed.stderr}`);
  const url = JSON.parse(await readFile(join(app, ".svc", "svc_manifest.json"), "utf8")).urls.cuda as string;
  const key = (await readFile(join(platformDir, "api-key"), "utf8")).trim();
  const started = Date.now();
  const res = await fetch(`${url}/runsync?wait=300000`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: '{"input": {}}',
  });
  const body = (await res.json()) as { status?: string; output?: unknown; error?: string };
  console.log(
    `inside the worker (${((Date.now() - started) / 1000).toFixed(1)} s, cold start included): ${body.status} ${JSON.stringify(body.output ?? body.error)}`,
  );
  process.stdout.write((await svc(["platform", "status"], app, env)).stdout);
  const log = await readFile(join(platformDir, "platform.log"), "utf8").catch(() => "");
  for (const line of log.split("\n")) if (/GPU|image svc\/worker-gpu/.test(line)) console.log(`platform log: ${line}`);
} finally {
  await svc(["platform", "stop"], app, env);
  await rm(root, { recursive: true, force: true });
}
