/**
 * What a worker may use, from its endpoint's hardware as the hosted platform sizes it: a CPU
 * flavour names its vCPUs and memory (`cpu3c-2-4`: 2 vCPUs, 4 GB), a GPU worker gets a share of the
 * machine per GPU it holds (hosted pods scale RAM and vCPUs with their GPUs). The platform's
 * `workerLimits` option caps them on a small machine (and lets tests ask for 512 MB); the cgroups
 * (./cgroups.ts) and the sandbox's /tmp (./sandbox.ts) enforce them. docs/platform.md, "Resources".
 */
import { cpus, totalmem } from "node:os";
import type { WorkerLimitCaps } from "../limit-options.ts";
import type { EndpointRecord } from "../store/index.ts";

const GB = 1024 ** 3;
const MB = 1024 ** 2;

/** The hosted CPU flavours: `<class>-<vCPUs>-<GB>`; c = 2 GB per vCPU, g = 4, m = 8. */
export const CPU_FLAVOURS: Readonly<Record<string, { vcpus: number; memoryGb: number }>> = Object.fromEntries(
  ["cpu3", "cpu5"].flatMap((gen) =>
    (
      [
        ["c", 2],
        ["g", 4],
        ["m", 8],
      ] as const
    ).flatMap(([kind, perVcpu]) => [1, 2, 4, 8, 16, 32].map((vcpus) => [`${gen}${kind}-${vcpus}-${vcpus * perVcpu}`, { vcpus, memoryGb: vcpus * perVcpu }])),
  ),
);

/** Processes and threads per worker (a fork bomb stops here with EAGAIN; torch's threads fit well within it). */
export const DEFAULT_PIDS = 1024;
/** The worker's /tmp (a tmpfs) holds at most this share of its memory, and its pages count in that memory. */
export const TMP_SHARE_OF_MEMORY = 0.5;

export interface WorkerLimits {
  /** The flavour the limits come from (`cpu3c-2-4`, `2 x ADA_24`). */
  flavour: string;
  memoryBytes: number;
  /** CPU quota, in CPUs (may exceed the machine's: then it binds nothing). */
  vcpus: number;
  pids: number;
  tmpBytes: number;
  /** Set when the flavour asks more memory than this machine has: what it asked, and that it got the machine's. */
  capped?: string;
}

export interface HostSize {
  memoryBytes: number;
  cpus: number;
  gpus: number;
}

export const hostSize = (gpus = 0): HostSize => ({ memoryBytes: totalmem(), cpus: cpus().length, gpus });

/** The size a CPU flavour's name says (`cpu3c-2-4`, or any `<name>-<vCPUs>-<GB>`); undefined for a name of no size. */
export function cpuFlavourSize(name: string): { vcpus: number; memoryGb: number } | undefined {
  const known = CPU_FLAVOURS[name];
  if (known) return known;
  const [, vcpus, memoryGb] = /-(\d+)-(\d+)$/.exec(name) ?? [];
  return vcpus && memoryGb && Number(vcpus) > 0 && Number(memoryGb) > 0 ? { vcpus: Number(vcpus), memoryGb: Number(memoryGb) } : undefined;
}

/**
 * The worker's limits. A CPU endpoint listing several flavours gets its first (the hosted
 * platform's preferred one). A GPU worker gets, per GPU, the machine's memory and CPUs divided by
 * its GPUs (by one where it has none), at most the whole machine.
 */
export function workerLimits(endpoint: Pick<EndpointRecord, "gpuIds" | "gpuCount" | "instanceIds">, host: HostSize, caps: WorkerLimitCaps = {}): WorkerLimits {
  let flavour: string;
  let memoryBytes: number;
  let vcpus: number;
  if (endpoint.gpuIds) {
    const count = endpoint.gpuCount ?? 1;
    const share = Math.min(1, count / Math.max(1, host.gpus));
    flavour = `${count} x ${endpoint.gpuIds.split(",")[0]!.trim()}`;
    memoryBytes = Math.floor(host.memoryBytes * share);
    vcpus = Math.max(1, Math.floor(host.cpus * share));
  } else {
    flavour = endpoint.instanceIds?.[0] ?? "cpu3c-2-4";
    const size = cpuFlavourSize(flavour) ?? CPU_FLAVOURS["cpu3c-2-4"]!;
    memoryBytes = size.memoryGb * GB;
    vcpus = size.vcpus;
  }
  // A limit above the machine's memory binds nothing (the host runs out first): a flavour larger than the machine gets the machine's.
  let capped: string | undefined;
  if (memoryBytes > host.memoryBytes) {
    capped = `flavour ${flavour} asks ${formatBytes(memoryBytes)} of memory; this machine has ${formatBytes(host.memoryBytes)}: each worker gets at most that`;
    memoryBytes = host.memoryBytes;
  }
  if (caps.memoryMb) memoryBytes = Math.min(memoryBytes, Math.floor(caps.memoryMb * MB));
  const pids = caps.pids ? Math.floor(caps.pids) : DEFAULT_PIDS;
  return { flavour, memoryBytes, vcpus, pids, tmpBytes: Math.floor(memoryBytes * TMP_SHARE_OF_MEMORY), ...(capped && { capped }) };
}

/** `4 GB`, `512 MB`, `2 KB`: how limits are written in messages. */
export function formatBytes(bytes: number): string {
  if (bytes >= GB && bytes % GB === 0) return `${bytes / GB} GB`;
  if (bytes >= MB) return `${Math.round(bytes / MB)} MB`;
  return bytes >= 1024 ? `${Math.round(bytes / 1024)} KB` : `${bytes} bytes`;
}
