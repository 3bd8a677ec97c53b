/**
 * A worker's launch plan: what the worker is, made once per worker here, whichever backend places it
 * (./backends/backend.ts): its build and artifact, image and handler, its variables with its token,
 * secrets and scoped key (contracts section 4), its app's host user (./uid-pool.ts), its volume, the
 * resources its flavour asks for, its isolation and egress, and, for a backend whose nodes fetch the
 * launch themselves, a one-time launch ticket. The backend says only how a worker it places reaches
 * the platform (`WorkerReach`); the sandbox, the limits and the channel are then made from the plan
 * where the worker runs (./backends/local.ts here, ./backends/launcher.ts on a Ray node).
 */
import { join } from "node:path";
import type { EndpointRecord, Store } from "../store/index.ts";
import { newSecret, secretDigest, sha256Hex } from "../_ids.ts";
import { volumeFolderOf } from "../volumes/mount.ts";
import type { Isolation } from "./image-env.ts";
import type { SandboxUser } from "./sandbox.ts";
import { resolveWorkerTarget, type WorkerTarget } from "./target.ts";
import type { WorkerUidPool } from "./uid-pool.ts";
import type { WorkerInfo } from "./worker-info.ts";
import { workerEnv, type WorkerEnvDeps } from "./worker-process.ts";
import { flavourResources, type WorkerResources } from "./backends/resources.ts";

/** How a worker a backend places reaches the platform, and what it sees of this host. */
export interface WorkerReach {
  /** The platform's URL as the worker reaches it (SVC_API_BASE). */
  apiBase: string;
  /** On this machine: the API's abstract Unix socket (SVC_PLATFORM_SOCKET) and this host's PATH, HOME, ... */
  here: boolean;
  /** Elsewhere: where its nodes see the platform's volumes folder (--ray-volumes), if the operator shares it. */
  volumesRoot?: string;
  /** Its launcher redeems a one-time ticket for the launch (the worker's token never travels with the placement). */
  ticket: boolean;
}

export interface LaunchPlan {
  workerId: string;
  endpoint: EndpointRecord;
  /** Build, artifact, handler, image, manifest env, egress (./target.ts). */
  target: WorkerTarget;
  /** The worker's variables, its token among them; its image environment adds PYTHONPATH and the sandbox's. */
  env: Record<string, string>;
  /** Its app's host user, where the platform runs as root. */
  user?: SandboxUser;
  /** The endpoint's volume folder as the worker's host sees it, where it has one. */
  volumeDir?: string;
  /** What one worker asks of a machine, from the flavour (a cluster's scheduler places it by this). */
  asks: WorkerResources;
  isolation: Isolation;
  /** The one-time launch ticket (`reach.ticket`); its digest is on the worker. */
  ticket?: string;
}

export interface LaunchPlanDeps extends WorkerEnvDeps {
  store: Store;
  /** The apps' host users, where the platform runs as root. */
  uids?: WorkerUidPool;
  /** A `[platform]` line in the worker's logs. */
  log(w: WorkerInfo, line: string): void;
}

/** The plan of worker `w` (its `token`) of `endpoint` running `buildId`, for a backend that reaches the platform as `reach` says. */
export async function buildLaunchPlan(
  deps: LaunchPlanDeps,
  endpoint: EndpointRecord,
  w: WorkerInfo,
  token: string,
  buildId: string | null,
  reach: WorkerReach,
): Promise<LaunchPlan> {
  const target = resolveWorkerTarget(deps.store, endpoint, buildId);
  const envDeps = reach.here ? deps : { ...deps, apiBase: () => reach.apiBase, workerSocket: undefined };
  const env = await workerEnv(envDeps, endpoint, w, token, target, reach.here);
  const plan: LaunchPlan = {
    workerId: w.id,
    endpoint,
    target,
    env: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined)),
    user: await deps.uids?.userFor(target.build.appId),
    volumeDir: volumeOf(deps, endpoint, w, reach),
    asks: flavourResources(endpoint),
    isolation: deps.options.isolation,
  };
  if (reach.ticket) {
    plan.ticket = newSecret("wkl_");
    w.ticketDigest = secretDigest(sha256Hex(plan.ticket));
  }
  return plan;
}

/** Here: the volume's folder, once made; elsewhere: under the operator's shared path, else none (said in the logs). */
function volumeOf(deps: LaunchPlanDeps, endpoint: EndpointRecord, w: WorkerInfo, reach: WorkerReach): string | undefined {
  if (reach.here) return volumeFolderOf(deps.store, deps.options.dataDir, endpoint);
  if (!endpoint.networkVolumeId) return undefined;
  if (reach.volumesRoot) return join(reach.volumesRoot, endpoint.networkVolumeId);
  deps.log(
    w,
    `worker ${w.id} runs without its endpoint's volume ${endpoint.networkVolumeId}: the Ray nodes see no shared volumes folder (start the platform with --ray-volumes <the folder where every node mounts ${join(deps.options.dataDir, "volumes")}>)`,
  );
  return undefined;
}
