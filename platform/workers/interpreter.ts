/**
 * Image name → Python interpreter. A GPU/torch image needs a Python that can import torch:
 * `/usr/bin/python3` when it can, else `python3`; anything else runs on `python3`.
 * `SVC_PYTHON_GPU` / `SVC_PYTHON_CPU` override the two choices. The probes run once per process.
 */
import { execFile } from "node:child_process";
import { imageKindOfName } from "../../core/images.ts";

let torchPython: Promise<string> | undefined;
let gpu: Promise<boolean> | undefined;
const warned = new Set<string>();

export const isGpuImage = (image: string): boolean => imageKindOfName(image) === "gpu";

const succeeds = (cmd: string, args: string[], timeout: number): Promise<boolean> =>
  new Promise((resolve) => execFile(cmd, args, { timeout }, (error) => resolve(!error)));

export async function defaultPythonForImage(image: string, endpointName: string, log: (line: string) => void, env = process.env): Promise<string> {
  if (!isGpuImage(image)) return env.SVC_PYTHON_CPU || "python3";
  gpu ??= succeeds("nvidia-smi", ["-L"], 10_000);
  if (!(await gpu) && !warned.has(endpointName)) {
    warned.add(endpointName);
    log(`warning: GPU endpoint ${endpointName} runs on a host without a GPU (no nvidia-smi)`);
  }
  if (env.SVC_PYTHON_GPU) return env.SVC_PYTHON_GPU;
  torchPython ??= succeeds("/usr/bin/python3", ["-c", "import torch"], 120_000).then((ok) => (ok ? "/usr/bin/python3" : "python3"));
  return torchPython;
}
