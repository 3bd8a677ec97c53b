/** `svc platform status`'s GPU lines: each GPU of the platform's machine, who holds it, who waits (docs/platform.md, "GPUs"). */
import { fetchPlatformView } from "./_platform-view.ts";

export interface GpuStatusView {
  gpus: Array<{ index: number; uuid: string; name: string; memoryMiB: number; workers: Array<{ workerId: string; endpointName: string | null }> }>;
  waiting: Array<{ workerId: string; endpointName: string | null; count: number }>;
}

/** The running platform's GPU view (GET /platform/gpus); undefined when it does not answer one. */
export const fetchGpuStatus = (url: string, apiKey: string) => fetchPlatformView<GpuStatusView>(url, apiKey, "/platform/gpus");

const holder = (w: { workerId: string; endpointName: string | null }) => `${w.workerId}${w.endpointName ? ` (${w.endpointName})` : ""}`;

export function formatGpuStatus(status: GpuStatusView): string {
  if (status.gpus.length === 0) return "GPUs: none (nvidia-smi lists none): GPU endpoints' workers run on the CPU\n";
  const lines = [`GPUs: ${status.gpus.length}`];
  for (const gpu of status.gpus) {
    const held = gpu.workers.length > 0 ? `held by ${gpu.workers.map(holder).join(", ")}` : "free";
    lines.push(`  GPU ${gpu.index}  ${gpu.name}  ${gpu.memoryMiB} MiB  ${gpu.uuid}  ${held}`);
  }
  for (const w of status.waiting) lines.push(`  waiting for ${w.count} GPU(s): ${holder(w)}`);
  return `${lines.join("\n")}\n`;
}
