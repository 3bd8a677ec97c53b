/**
 * A remote worker's launch description (./remote-run.ts RemoteLaunch), what its launcher on the node
 * fetches once with its ticket: the worker's launch plan (../launch-plan.ts, made for a backend that
 * reaches the platform at the nodes' URL: none of this host's own PATH, HOME, ..., no Unix socket, the
 * volume as the operator's shared path on the nodes) as the launcher reads it.
 */
import type { LaunchPlan } from "../launch-plan.ts";
import type { RemoteLaunch } from "./remote-run.ts";

export function remoteLaunchOf(plan: LaunchPlan): RemoteLaunch {
  return {
    workerId: plan.workerId,
    buildId: plan.target.build.id,
    sha256: plan.target.build.sha256,
    image: plan.target.image,
    handler: plan.target.handler,
    env: plan.env,
    volumeDir: plan.volumeDir,
    isolation: plan.isolation,
    network: plan.target.network,
    user: plan.user,
  };
}
