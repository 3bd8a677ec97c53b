/**
 * A remote worker's launch description (./backend.ts RemoteLaunch), made on the platform: the same
 * target and variables as a local worker's (../worker-process.ts workerEnv), but with the URL the
 * nodes reach the platform at, none of this host's own PATH, HOME, ... (the launcher adds its node's),
 * no Unix socket, and the volume as the operator's shared path on the nodes.
 */
import { join } from "node:path";
import type { EndpointRecord } from "../../store/index.ts";
import type { WorkerInfo } from "../worker-info.ts";
import { resolveWorkerTarget } from "../target.ts";
import { workerEnv, type WorkerEnvDeps } from "../worker-process.ts";
import type { RemoteLaunch } from "./backend.ts";
import type { Store } from "../../store/index.ts";
import type { WorkerUidPool } from "../uid-pool.ts";

export interface RemoteLaunchDeps extends WorkerEnvDeps {
  store: Store;
  /** The platform's URL as the nodes reach it. */
  nodeApiBase: () => string;
  /** Where the nodes see the platform's volumes folder (--ray-volumes), if shared. */
  volumesRoot?: string;
  /** The apps' host users, where the platform runs as root: the launcher runs the worker as its app's. */
  uids?: WorkerUidPool;
}

export async function remoteLaunch(
  deps: RemoteLaunchDeps,
  endpoint: EndpointRecord,
  w: WorkerInfo,
  token: string,
  buildId: string | null,
  log: (line: string) => void,
): Promise<RemoteLaunch> {
  const target = resolveWorkerTarget(deps.store, endpoint, buildId);
  const env = await workerEnv({ ...deps, apiBase: deps.nodeApiBase, workerSocket: undefined }, endpoint, w, token, target, false);
  let volumeDir: string | undefined;
  if (endpoint.networkVolumeId) {
    if (deps.volumesRoot) volumeDir = join(deps.volumesRoot, endpoint.networkVolumeId);
    else
      log(
        `worker ${w.id} runs without its endpoint's volume ${endpoint.networkVolumeId}: the Ray nodes see no shared volumes folder (start the platform with --ray-volumes <the folder where every node mounts ${join(deps.options.dataDir, "volumes")}>)`,
      );
  }
  return {
    workerId: w.id,
    buildId: target.build.id,
    sha256: target.build.sha256,
    image: target.image,
    handler: target.handler,
    env: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined)),
    volumeDir,
    isolation: deps.options.isolation,
    network: target.network,
    user: await deps.uids?.userFor(target.build.appId),
  };
}
