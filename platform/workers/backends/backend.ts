/**
 * The worker-backend seam. The supervisor and the autoscaler decide which workers run; a backend
 * decides where. The default is local processes (the supervisor's own spawnWorker: bwrap on this
 * machine); a remote backend (./ray.ts: each worker a Ray job) places the worker elsewhere and
 * reports back through these hooks, so the supervisor's life cycle (ready, busy, stop, exit, jobs
 * handed back) is the same for both. docs/platform.md, "Workers on a Ray cluster".
 */
import type { EndpointRecord } from "../../store/index.ts";
import type { WorkerInfo } from "../worker-info.ts";

export type WorkerBackendName = "local" | "ray";

/** What a remote backend tells the supervisor about one worker. */
export interface RemoteHooks {
  /** A `[platform]` line in the worker's logs. */
  log(line: string): void;
  /** The worker is gone (its job ended, was stopped, or its node died); `how` says which. */
  exited(how: string): void;
}

/** A remote worker's handle on its WorkerInfo (`w.remote`): how to stop it and where it runs. */
export interface RemoteRun {
  backend: WorkerBackendName;
  /** The backend's id of the worker's run (Ray: the job's submission id). */
  runId: string;
  /** The build it runs: the artifact route serves only this one. */
  buildId: string;
  /** The node the backend placed it on, once known. */
  node?: string;
  /** It waits for a place: no node has what it asks for free (its state is `throttled`). */
  unplaced: boolean;
  /** Its launch description, handed out once (the launch route), then dropped. */
  launch?: RemoteLaunch;
  /** SIGTERM: stop gracefully; SIGKILL: stop now. Idempotent. */
  signal(signal: NodeJS.Signals): void;
}

/** What the launcher on the node asks the platform for (GET /v2/_worker/<id>/launch), once. */
export interface RemoteLaunch {
  workerId: string;
  buildId: string;
  sha256: string;
  image: string;
  handler: string;
  /** The worker's variables (contracts section 4), without the platform host's own PATH, HOME, ... */
  env: Record<string, string>;
  /** The endpoint's network volume, as a folder every node sees (docs/platform.md, "Volumes on a cluster"). */
  volumeDir?: string;
  isolation: "auto" | "strict";
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
  /** Places the worker; `launch` is what its launcher will fetch. Resolves once placement is asked for. */
  start(endpoint: EndpointRecord, w: WorkerInfo, launch: RemoteLaunch, hooks: RemoteHooks): Promise<RemoteRun>;
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
