/**
 * Image name → Python interpreter. A GPU/torch image needs a Python that can import torch: on a
 * machine with GPUs, the first Python whose torch reports CUDA (`torch.cuda.is_available()`);
 * else `/usr/bin/python3` when it imports torch, else `python3`. Anything else runs on `python3`.
 * `SVC_PYTHON_GPU` / `SVC_PYTHON_CPU` override the two choices. The probes run once per process.
 * docs/platform.md, "Image environments" and "GPUs".
 */
import { execFile } from "node:child_process";
import { imageKindOfName } from "../../core/images.ts";

let torchPython: Promise<string> | undefined;
let cudaPython: Promise<string | undefined> | undefined;

/** Where a GPU machine's torch usually is: the PATH's python3, the system's, a /usr/local build. */
const CUDA_CANDIDATES = ["python3", "/usr/bin/python3", "/usr/local/bin/python3"];
const CUDA_PROBE = "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)";

const isGpuImage = (image: string): boolean => imageKindOfName(image) === "gpu";

const succeeds = (cmd: string, args: string[], timeout: number): Promise<boolean> =>
  new Promise((resolve) => execFile(cmd, args, { timeout }, (error) => resolve(!error)));

/** The first of `candidates` whose torch reports CUDA, if any (asked in order, one at a time). */
export async function firstCudaPython(candidates: string[]): Promise<string | undefined> {
  for (const python of candidates) if (await succeeds(python, ["-c", CUDA_PROBE], 120_000)) return python;
  return undefined;
}

/** @param gpus does the machine have GPUs (./gpu-assign.ts `present`)? Asked for GPU images only. */
export async function defaultPythonForImage(image: string, gpus: () => Promise<boolean>, env = process.env): Promise<string> {
  if (!isGpuImage(image)) return env.SVC_PYTHON_CPU || "python3";
  if (env.SVC_PYTHON_GPU) return env.SVC_PYTHON_GPU;
  if (await gpus()) {
    cudaPython ??= firstCudaPython(CUDA_CANDIDATES);
    const found = await cudaPython;
    if (found) return found;
  }
  torchPython ??= succeeds("/usr/bin/python3", ["-c", "import torch"], 120_000).then((ok) => (ok ? "/usr/bin/python3" : "python3"));
  return torchPython;
}
