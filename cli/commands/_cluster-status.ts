/** `svc platform status`'s cluster lines: with the Ray backend, each node, its GPUs and the workers on it (docs/platform.md, "Workers on a Ray cluster"). */
import { fetchPlatformView } from "./_platform-view.ts";

interface NamedWorker {
  workerId: string;
  endpointName: string | null;
}

export interface ClusterStatusView {
  backend: "local" | "ray";
  address?: string;
  nodes?: Array<{ id: string; address: string; alive: boolean; head: boolean; cpus: number; gpus: number; memoryBytes: number; workers: NamedWorker[] }>;
  unplaced?: NamedWorker[];
}

/** The running platform's cluster view (GET /platform/cluster); undefined when it does not answer one. */
export const fetchClusterStatus = (url: string, apiKey: string) => fetchPlatformView<ClusterStatusView>(url, apiKey, "/platform/cluster");

const worker = (w: NamedWorker) => `${w.workerId}${w.endpointName ? ` (${w.endpointName})` : ""}`;

export function formatClusterStatus(view: ClusterStatusView): string {
  if (view.backend !== "ray") return "";
  const nodes = view.nodes ?? [];
  const lines = [`Workers: Ray jobs on the cluster at ${view.address} (${nodes.filter((n) => n.alive).length} node(s) alive)`];
  for (const n of nodes) {
    const what = `${n.cpus} CPU, ${n.gpus} GPU, ${(n.memoryBytes / 2 ** 30).toFixed(1)} GiB`;
    const on = n.workers.length > 0 ? n.workers.map(worker).join(", ") : "no worker";
    lines.push(`  node ${n.id.slice(0, 12)}  ${n.address}${n.head ? "  head" : ""}  ${n.alive ? "alive" : "dead"}  ${what}  ${on}`);
  }
  for (const w of view.unplaced ?? []) lines.push(`  not placed yet: ${worker(w)}`);
  return `${lines.join("\n")}\n`;
}
