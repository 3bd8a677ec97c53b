/** A worker as the supervisor tracks it, and what it reports: shared by the supervisor's parts and the routes. */
import type { ChildProcess } from "node:child_process";
import type { WorkerCgroup } from "./cgroups.ts";
import type { LimitsView } from "./worker-resources.ts";
import type { RemoteRun } from "./backends/remote-run.ts";
import type { WorkerChannel } from "./worker-channel.ts";

export type WorkerState = "initializing" | "throttled" | "idle" | "running" | "unhealthy";

export interface WorkerInfo {
  id: string;
  endpointId: string;
  type: "QB" | "LB";
  tokenHash: string;
  /** `tokenHash` as bytes (decoded once: every worker request is checked against it). */
  tokenDigest: Buffer;
  /** Build, image and env this worker runs; a different key on its endpoint makes it outdated. */
  configKey: string;
  proc?: ChildProcess;
  /** A worker a remote backend placed (./backends/backend.ts): no process here. */
  remote?: RemoteRun;
  /** A remote worker's one-time launch ticket, as a digest: what its job carries instead of the token (../api/remote-worker-routes.ts). */
  ticketDigest?: Buffer;
  /** The Python process (inside bwrap: its child, which is what gets signals). */
  pid?: number;
  /** The worker reported that its endpoint's module does not import (it still fails jobs). */
  failure?: WorkerError;
  /** Its last output lines: why it exited, when it exits before it is ready. */
  lastLines: string[];
  startedAt: number;
  /** When the process was spawned (after the build was unpacked). */
  spawnedAt?: number;
  /** Process start → first job-take (QB) or first GET /ping 200 (LB). */
  coldStartMs?: number;
  /** A job's trace showed its cold start (../telemetry/tracing.ts): no later job's does. */
  coldStartTraced?: boolean;
  /** QB: took its first job request; LB: answered GET /ping. */
  ready: boolean;
  unhealthy: boolean;
  stopping: boolean;
  /** Its endpoint moved on (a new build or settings) while it was busy: no new work; stopped once idle. */
  outdated: boolean;
  exited: boolean;
  lastSeen: number;
  openPolls: number;
  idleSince: number;
  lbPort?: number;
  /** A sandboxed LB worker listens on this Unix socket instead of lbPort (./worker-channel.ts). */
  lbSocket?: string;
  /** Its network channel (./worker-channel.ts), closed when it exits. */
  channel?: WorkerChannel;
  lbFailures: number;
  probing: boolean;
  inFlight: number;
  cancel: string[];
  stop: boolean;
  signalWaiter?: () => void;
  /** Its memory, CPU, process and /tmp limits, and which hold (./worker-resources.ts). */
  limits?: LimitsView;
  /** Its cgroup, where the machine gives one (./cgroups.ts). */
  cgroup?: WorkerCgroup;
  /** The kernel killed it for memory: its jobs fail (WORKER_OUT_OF_MEMORY) rather than go back to the queue. */
  outOfMemory?: boolean;
  exit: Promise<void>;
  resolveExit: () => void;
}

/** What a worker reported (runtime: `ImportFailure.error()`), or what the platform saw of its exit. */
export interface WorkerError {
  error_type: string;
  error_message: string;
  error_traceback?: string;
  file?: string | null;
  line?: number | null;
  remedy?: string;
}

/** Why an endpoint's workers cannot serve, for its /health: the error, which worker, since when. */
export interface EndpointProblem extends WorkerError {
  /** The worker that showed it; none when no worker can start (unrunnable). */
  workerId?: string;
  since: string;
}
