/**
 * Where the platform reaches a load-balanced worker: a sandboxed one on the Unix socket in its own
 * folder (./worker-channel.ts: nothing else on the machine reaches it), one without the sandbox on
 * its loopback port. One keep-alive pool per worker socket, closed when the worker exits.
 */
import { Agent, type Dispatcher } from "undici";
import type { WorkerInfo } from "./worker-info.ts";

const agents = new Map<string, Agent>();

/** The URL and the options that send a request to `path` on the worker. */
export function lbTarget(w: WorkerInfo, path: string): { url: string; dispatcher?: Dispatcher } {
  if (!w.lbSocket) return { url: `http://127.0.0.1:${w.lbPort}${path}` };
  let agent = agents.get(w.lbSocket);
  if (!agent) {
    agent = new Agent({ connect: { socketPath: w.lbSocket } });
    agents.set(w.lbSocket, agent);
  }
  return { url: `http://localhost${path}`, dispatcher: agent };
}

/** Lets go of the worker's pool (it exited). */
export function forgetLbTarget(w: WorkerInfo): void {
  if (!w.lbSocket) return;
  void agents
    .get(w.lbSocket)
    ?.close()
    .catch(() => undefined);
  agents.delete(w.lbSocket);
}
