/**
 * A remote worker's run and its launch description: what WorkerInfo (`w.remote`) holds of a worker
 * a backend placed elsewhere. Apart from backend.ts, which needs WorkerInfo, so the two do not
 * import each other.
 */
export type WorkerBackendName = "local" | "ray";

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
  /** Egress for the worker: false where the endpoint says `network=False`. */
  network: boolean;
  /** The host user a launcher run as root runs the worker as: its app's, from the platform's pool (../uid-pool.ts). */
  user?: { uid: number; gid: number };
}
