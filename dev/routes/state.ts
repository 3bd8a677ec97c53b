/** What the dev server's routes read (dev/routes/routes.ts): the dev server gives the real one, unit tests a fake. */
import type { LbResponse } from "../../core/client/index.ts";
import type { Manifest } from "../../core/types.ts";
import type { Job } from "./input.ts";
import type { RouteTable } from "./routes-table.ts";

export interface RemoteRef {
  id: string;
  url: string;
}

export interface DevRoutesState {
  manifest(): Manifest;
  table(): RouteTable;
  health(): Record<string, unknown>;
  /** The endpoint's platform side, deployed first when lazy. */
  ensure(endpoint: string): Promise<RemoteRef>;
  /** The job, and the HTTP status the platform gave its final answer when known (400: input rejected). */
  runsync(remote: RemoteRef, input: Record<string, unknown>, timeoutMs: number): Promise<{ job: Job; httpStatus?: number }>;
  status(remote: RemoteRef, jobId: string): Promise<{ job: Job; httpStatus?: number }>;
  lbRequest(remote: RemoteRef, method: string, path: string, body: string | undefined, headers: Record<string, string>): Promise<LbResponse>;
  /** The platform's Prometheus metrics (`GET /metrics`, docs/observability.md), as it answered them. */
  metrics(): Promise<Response>;
  /** How long runsync waits for a final job before answering 202 (ms). */
  syncTimeoutMs: number;
}
