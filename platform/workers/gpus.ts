/**
 * The machine's NVIDIA GPUs as the sandbox needs them: the inventory (`nvidia-smi --query-gpu`),
 * the device nodes a worker holding some of them gets (`/dev/nvidia<N>` and the driver's control
 * nodes), and the driver's user-space libraries (found through `ldconfig -p`, not a fixed path:
 * /usr/local/nvidia/lib64 on the H100 machine). Assignment is ./gpu-pool.ts. docs/platform.md, "GPUs".
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname } from "node:path";
import type { GpuDevice } from "../gpu-machine.ts";

/** What the platform asks nvidia-smi (one line per GPU, no header). */
const NVIDIA_SMI_QUERY = ["--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader"];

/** Parses `0, GPU-5f3c…, NVIDIA H100 80GB HBM3, 81559 MiB` lines; lines that are not one GPU are skipped. */
export function parseNvidiaSmi(text: string): GpuDevice[] {
  const gpus: GpuDevice[] = [];
  for (const line of text.split("\n")) {
    const fields = line.split(",").map((f) => f.trim());
    if (fields.length < 4 || !/^\d+$/.test(fields[0]!)) continue;
    const memory = fields[fields.length - 1]!;
    gpus.push({ index: Number(fields[0]), uuid: fields[1]!, name: fields.slice(2, -1).join(", "), memoryMiB: Number.parseInt(memory, 10) || 0 });
  }
  return gpus;
}

const output = (cmd: string, args: string[]): Promise<string | undefined> =>
  new Promise((resolve) => execFile(cmd, args, { timeout: 15_000, maxBuffer: 4 << 20 }, (error, stdout) => resolve(error ? undefined : stdout)));

/**
 * The GPUs the platform may hand out: all, or those its own CUDA_VISIBLE_DEVICES names (by index
 * or UUID), so that two platforms on one machine can split its GPUs. An empty value leaves none.
 */
export function visibleGpus(gpus: GpuDevice[], visible: string | undefined): GpuDevice[] {
  if (visible === undefined) return gpus;
  const names = visible
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean);
  return gpus.filter((gpu) => names.some((name) => name === String(gpu.index) || (name.length > 4 && gpu.uuid.startsWith(name))));
}

/** The GPUs nvidia-smi reports (narrowed by the platform's CUDA_VISIBLE_DEVICES); none when it is absent or fails (no driver). */
export async function queryGpus(env: NodeJS.ProcessEnv = process.env): Promise<GpuDevice[]> {
  const text = await output("nvidia-smi", NVIDIA_SMI_QUERY);
  return text ? visibleGpus(parseNvidiaSmi(text), env.CUDA_VISIBLE_DEVICES) : [];
}

/** The driver's user-space libraries: CUDA, NVML, and the libnvidia-* they load. */
const DRIVER_LIBRARY = /^lib(cuda|cudadebugger|nvidia-[\w.-]+|nvcuvid|nvoptix)\.so/;

/** The folders of the driver's libraries in `ldconfig -p` output (`\tlibcuda.so.1 (libc6,x86-64) => /path`). */
export function driverLibraryDirs(ldconfigOutput: string): string[] {
  const dirs = new Set<string>();
  for (const line of ldconfigOutput.split("\n")) {
    const match = /^\s*(\S+)\s+\(.*\)\s+=>\s+(\/\S+)\s*$/.exec(line);
    if (match && DRIVER_LIBRARY.test(match[1]!)) dirs.add(dirname(match[2]!));
  }
  return [...dirs];
}

/** `ldconfig -p` (Debian keeps it in /sbin, off a user's PATH). */
export async function queryDriverLibraryDirs(): Promise<string[]> {
  for (const ldconfig of ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"]) {
    const text = await output(ldconfig, ["-p"]);
    if (text !== undefined) return driverLibraryDirs(text);
  }
  return [];
}

/** The driver's nodes every GPU process opens (those present: uvm-tools and modeset are not everywhere). */
const CONTROL_NODES = ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"];

/** The device nodes of a worker holding `gpus`: theirs, not the other GPUs', plus the control nodes. */
export function deviceNodes(gpus: GpuDevice[], exists: (path: string) => boolean = existsSync): string[] {
  return [...gpus.map((gpu) => `/dev/nvidia${gpu.index}`), ...CONTROL_NODES].filter(exists);
}

/**
 * CUDA_VISIBLE_DEVICES for the held GPUs. Inside the sandbox the bound nodes keep their host
 * numbers and CUDA's own order may differ from nvidia-smi's, so it names UUIDs (indices only where
 * nvidia-smi gave none).
 */
export const cudaVisibleDevices = (gpus: GpuDevice[]): string =>
  gpus.map((gpu) => (gpu.uuid.startsWith("GPU-") || gpu.uuid.startsWith("MIG-") ? gpu.uuid : String(gpu.index))).join(",");

/** One GPU's use, for the metrics (docs/observability.md). */
export interface GpuUse {
  index: number;
  uuid: string;
  name: string;
  memoryUsedMiB: number;
  memoryTotalMiB: number;
  /** Percent, over the driver's last sample period. */
  utilizationPercent: number;
}

const NVIDIA_SMI_USE = ["--query-gpu=index,uuid,name,memory.used,memory.total,utilization.gpu", "--format=csv,noheader,nounits"];

/** Parses `0, GPU-5f3c…, NVIDIA H200, 1024, 143771, 37` lines; `[N/A]` counts as 0. */
export function parseGpuUse(text: string): GpuUse[] {
  const out: GpuUse[] = [];
  for (const line of text.split("\n")) {
    const f = line.split(",").map((v) => v.trim());
    if (f.length < 6 || !/^\d+$/.test(f[0]!)) continue;
    const n = (v: string) => Number.parseFloat(v) || 0;
    const [used, total, util] = f.slice(-3).map(n) as [number, number, number];
    out.push({ index: Number(f[0]), uuid: f[1]!, name: f.slice(2, -3).join(", "), memoryUsedMiB: used, memoryTotalMiB: total, utilizationPercent: util });
  }
  return out;
}

/** The visible GPUs' memory and utilisation now; none when nvidia-smi is absent or fails. */
export async function queryGpuUse(env: NodeJS.ProcessEnv = process.env): Promise<GpuUse[]> {
  const text = await output("nvidia-smi", NVIDIA_SMI_USE);
  if (!text) return [];
  const all = parseGpuUse(text);
  const devices = all.map((g) => ({ index: g.index, uuid: g.uuid, name: g.name, memoryMiB: g.memoryTotalMiB }));
  const visible = new Set(visibleGpus(devices, env.CUDA_VISIBLE_DEVICES).map((g) => g.index));
  return all.filter((g) => visible.has(g.index));
}
