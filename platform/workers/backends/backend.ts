/**
 * The worker-backend seam. The supervisor and the autoscaler decide which workers run; a backend
 * decides where. The default is local processes (the supervisor's own spawnWorker: bwrap on this
 * machine); a remote backend (./ray.ts: each worker a Ray job) places the worker elsewhere and
 * reports back through these hooks, so the supervisor's life cycle (ready, busy, stop, exit, jobs
 * handed back) is the same for both. docs/platform.md, "Workers on a Ray cluster".
 */
import type { EndpointRecord } from "../../store/index.ts";
import type { WorkerInfo } from "../worker-info.ts";
import type { RemoteLaunch, RemoteRun, WorkerBackendName } from "./remote-run.ts";

export type { RemoteLaunch, RemoteRun, WorkerBackendName };

/** What a remote backend tells the supervisor about one worker. */
export interface RemoteHooks {
  /** A `[platform]` line in the worker's logs. */
  log(line: string): void;
  /** The worker is gone (its job ended, was stopped, or its node died); `how` says which. */
  exited(how: string): void;
}

/** A backend that places workers somewhere other than this machine. */
export interface RemoteWorkers {
  readonly name: WorkerBackendName;
  /** The platform's URL as the nodes reach it. */
  nodeApiBase(): string;
  /** Where the nodes see the platform's volumes folder, if the operator shares it. */
  readonly volumesRoot?: string;
  /** Does it place this endpoint's workers (else they stay local processes)? */
  places(endpoint: EndpointRecord): boolean;
  /**
   * Places the worker; `launch` is what its launcher will fetch with `ticket` (once: the ticket opens
   * nothing else, the token is in the launch). Resolves once placement is asked for.
   */
  start(endpoint: EndpointRecord, w: WorkerInfo, launch: RemoteLaunch, hooks: RemoteHooks, ticket: string): Promise<RemoteRun>;
  /** The cluster's nodes and the workers on each (`svc platform status`). */
  cluster(workers: Iterable<WorkerInfo>): Promise<ClusterView>;
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
