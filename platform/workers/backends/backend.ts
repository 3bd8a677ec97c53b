/**
 * The worker-backend seam: every worker is placed by a backend. The supervisor and the autoscaler
 * decide which workers run and when they stop; a backend decides where, and starts the worker there
 * from its launch plan (../launch-plan.ts, the same for every backend). The local backend (./local.ts)
 * runs it as a process in the bwrap sandbox on this machine; the Ray backend (./ray.ts) as a Ray job
 * whose launcher (./launcher.ts) makes the same sandbox on the node. Each reports back through
 * `BackendHooks` (started, its output, exited); whether the worker is ready is the platform's to see
 * through the API, so the supervisor's life cycle (ready, busy, stop, exit, jobs handed back) is one
 * for all. docs/architecture.md, "Where workers run"; docs/platform.md, "Workers on a Ray cluster".
 */
import type { EndpointRecord } from "../../store/index.ts";
import type { LaunchPlan, WorkerReach } from "../launch-plan.ts";
import type { WorkerInfo } from "../worker-info.ts";
import type { RemoteLaunch, RemoteRun, WorkerBackendName } from "./remote-run.ts";

export type { RemoteLaunch, RemoteRun, WorkerBackendName };

/** What a backend tells the supervisor about one worker. */
export interface BackendHooks {
  /** A `[platform]` line in the worker's logs. */
  log(line: string): void;
  /** A line the worker wrote (within its log rate). */
  output(line: string): void;
  /** Its process started (`pid` here, null elsewhere) at `spawnedAt`, when its cold start began. */
  started(pid: number | null, spawnedAt: number): void;
  /** The worker is gone (it exited, was stopped, or its node died); `how` says which. */
  exited(how: string, outOfMemory?: boolean): void;
  /** Its process could not be started after all (no exit follows). */
  failed(why: string): void;
  /** It was stopped, or the platform closes, while it was being placed: it must not start. */
  gone(): boolean;
}

export interface WorkerBackend {
  readonly name: WorkerBackendName;
  /** Does it place this endpoint's workers (else the local backend does)? */
  places(endpoint: EndpointRecord): boolean;
  /** How a worker it places reaches the platform: the launch plan is made for it. */
  reach(): WorkerReach;
  /**
   * Places the worker and starts it from `plan`; resolves once placement is asked for, rejects when
   * it cannot be (the worker did not start). Its handle goes on the worker's record (`w.proc`, `w.remote`).
   */
  start(plan: LaunchPlan, w: WorkerInfo, hooks: BackendHooks): Promise<void>;
  /** A worker it placed is ready (the local backend starts the endpoint's warm spare). */
  ready?(w: WorkerInfo): void;
  /** The endpoint is deleted: what the backend keeps for it goes. */
  forget?(endpointId: string): void;
  /** Its nodes and the workers on each (`svc platform status`); none for this machine alone. */
  cluster?(workers: Iterable<WorkerInfo>): Promise<ClusterView>;
  /** The platform stops: every run it started is stopped. */
  close(): Promise<void>;
}

export interface ClusterNode {
  id: string;
  address: string;
  alive: boolean;
  head: boolean;
  cpus: number;
  gpus: number;
  memoryBytes: number;
  workers: Array<{ workerId: string; endpointId: string }>;
}

export interface ClusterView {
  backend: WorkerBackendName;
  address: string;
  nodes: ClusterNode[];
  /** Workers not on a node yet (waiting for a place). */
  unplaced: Array<{ workerId: string; endpointId: string }>;
}
