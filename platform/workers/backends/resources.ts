/**
 * What one worker of an endpoint asks a cluster for, from its flavour: a GPU endpoint gpuCount GPUs
 * (and one CPU); a CPU endpoint the vCPUs and memory its flavour's name says (`cpu3c-2-4`: 2 vCPUs,
 * 4 GiB). A flavour name svc does not know asks for one CPU and no reserved memory.
 */
import type { EndpointRecord } from "../../store/index.ts";
import { cpuFlavourSize } from "../flavours.ts";

export interface WorkerResources {
  cpus: number;
  gpus: number;
  memoryBytes: number;
}

export function flavourResources(endpoint: Pick<EndpointRecord, "gpuIds" | "gpuCount" | "instanceIds">): WorkerResources {
  if (endpoint.gpuIds) return { cpus: 1, gpus: endpoint.gpuCount ?? 1, memoryBytes: 0 };
  const size = cpuFlavourSize(endpoint.instanceIds?.[0] ?? ""); // the same reading as the local workers' limits (../flavours.ts)
  return size ? { cpus: size.vcpus, gpus: 0, memoryBytes: size.memoryGb * 2 ** 30 } : { cpus: 1, gpus: 0, memoryBytes: 0 };
}
