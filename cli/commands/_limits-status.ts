/** `svc platform status`'s resource lines: which worker limits hold on this machine, and each worker's (docs/platform.md, "Resources"). */
import { fetchPlatformView } from "./_platform-view.ts";

interface WorkerLimitsView {
  flavour: string;
  memoryBytes: number;
  vcpus: number;
  pids: number;
  tmpBytes: number;
  enforced: string[];
}

export interface LimitsStatusView {
  cgroups: { version: 1 | 2 | null; controllers: string[]; why?: string };
  workers: Array<{ workerId: string; endpointName: string | null; limits: WorkerLimitsView; memory: { current: number; peak?: number } | null }>;
}

/** The running platform's limits (GET /platform/limits); undefined when it does not answer them. */
export const fetchLimitsStatus = (url: string, apiKey: string) => fetchPlatformView<LimitsStatusView>(url, apiKey, "/platform/limits");

const mb = (bytes: number) => `${Math.round(bytes / 1024 ** 2)} MB`;

export function formatLimitsStatus(status: LimitsStatusView): string {
  const { version, controllers, why } = status.cgroups;
  const lines = [version ? `Worker limits: cgroup v${version} (${controllers.join(", ")})${why ? `; ${why}` : ""}` : `Worker limits: none hold (${why})`];
  for (const w of status.workers) {
    const l = w.limits;
    const used = w.memory ? `, using ${mb(w.memory.current)}${w.memory.peak !== undefined ? ` (peak ${mb(w.memory.peak)})` : ""}` : "";
    lines.push(
      `  ${w.workerId}${w.endpointName ? ` (${w.endpointName})` : ""}  ${l.flavour}: ${mb(l.memoryBytes)}, ${l.vcpus} vCPU, ${l.pids} processes, /tmp ${mb(l.tmpBytes)}${used}`,
    );
  }
  return `${lines.join("\n")}\n`;
}
