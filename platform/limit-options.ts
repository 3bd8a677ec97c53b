/**
 * The limits the platform's options set, with their defaults: every worker's memory and pids caps
 * (workers/flavours.ts), a worker's log rate (workers/log-rate.ts), the connections the servers
 * keep (api/connection-caps.ts). Below the options and all three, so each reads them one way.
 */

/** The platform's settings over every worker's limits (PlatformOptions.workerLimits; SVC_WORKER_MEMORY_MB, SVC_WORKER_PIDS): memory at most this, pids this many. */
export interface WorkerLimitCaps {
  memoryMb?: number;
  pids?: number;
}

const positive = (text: string | undefined): number | undefined => {
  const n = Number(text?.trim());
  return text && Number.isFinite(n) && n > 0 ? n : undefined;
};

/** The caps from the environment (what a detached platform inherits). */
export const capsFromEnv = (env: NodeJS.ProcessEnv = process.env): WorkerLimitCaps => ({
  memoryMb: positive(env.SVC_WORKER_MEMORY_MB),
  pids: positive(env.SVC_WORKER_PIDS),
});

export interface LogRate {
  /** Characters per second a worker's lines may average. */
  perSecond: number;
  /** Characters it may write at once above that. */
  burst: number;
}

export const DEFAULT_LOG_RATE: LogRate = { perSecond: 1024 * 1024, burst: 8 * 1024 * 1024 };

export interface ConnectionLimits {
  /** Open connections over all servers (kept under the descriptor limit, with room for the platform's files). */
  total: number;
  /** Per verified key (a user's tools, or one app's workers calling the API). */
  perClient: number;
  /** Per worker on its own routes (`/v2/_worker/<id>/...`), counted by its verified token. */
  perWorker: number;
  /** Shared by every connection whose first request proves no identity (no key, a wrong one, a made-up one). */
  anonymous: number;
  /** A request (headers and body) not whole this long after it began is cut: slow bodies hold no place for ever. */
  requestMs: number;
  /** A connection that sent no request within this is closed. */
  firstRequestMs: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  total: 16_384,
  perClient: 1024,
  perWorker: 256,
  anonymous: 64,
  firstRequestMs: 10_000,
  requestMs: 300_000,
};
