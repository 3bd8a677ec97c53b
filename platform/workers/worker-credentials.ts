/**
 * A worker's credentials as the API checks them: its token (SVC_WORKER_TOKEN) on every worker
 * route, and a remote worker's one-time launch ticket (../launch-plan.ts) on its launch route only
 * (../api/remote-worker-routes.ts). Both are compared as digests in constant time; an exited worker's
 * credentials open nothing.
 */
import { digestMatches } from "../_ids.ts";
import type { WorkerInfo } from "./worker-info.ts";

/** The live worker whose token this is. */
export function workerByToken(workers: ReadonlyMap<string, WorkerInfo>, workerId: string, token: string | undefined): WorkerInfo | undefined {
  const w = workers.get(workerId);
  return w && !w.exited && digestMatches(token, w.tokenDigest) ? w : undefined;
}

/** The remote worker whose launch ticket this is (its launcher, or someone who read the ticket). */
export function workerByTicket(workers: ReadonlyMap<string, WorkerInfo>, workerId: string, ticket: string | undefined): WorkerInfo | undefined {
  const w = workers.get(workerId);
  return w?.remote && w.ticketDigest && !w.exited && digestMatches(ticket, w.ticketDigest) ? w : undefined;
}
