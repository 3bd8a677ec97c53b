/**
 * Where the platform's workers run (--workers, SVC_WORKERS): local processes, or Ray jobs on a Ray
 * cluster (docs/platform.md, "Workers on a Ray cluster"). Light on purpose: `svc platform start`
 * checks the flags through platform/local.ts before it loads any server.
 */
import { errors } from "../core/errors.ts";

export type WorkersOption = { backend: "local" } | ({ backend: "ray" } & RayBackendOptions);

/**
 * The env form of `--workers ray --ray-address <url>` (what `svc platform start` sets, so that a
 * detached platform inherits it): SVC_WORKERS=ray, SVC_RAY_ADDRESS, and optionally
 * SVC_RAY_PLATFORM_URL, SVC_RAY_VOLUMES, SVC_RAY_LAUNCHER, SVC_NODE_DIR.
 */
export function workersFromEnv(env: NodeJS.ProcessEnv = process.env): WorkersOption {
  const backend = env.SVC_WORKERS?.trim().toLowerCase() || "local";
  if (backend === "local") return { backend: "local" };
  if (backend !== "ray") throw errors.CLI_USAGE(`SVC_WORKERS (--workers) takes local or ray, not "${env.SVC_WORKERS}".`, "platform");
  const address = env.SVC_RAY_ADDRESS?.trim();
  if (!address) throw errors.CLI_USAGE("--workers ray needs the Ray head's dashboard URL: --ray-address http://<head>:8265 (or SVC_RAY_ADDRESS).", "platform");
  const opt = (name: string) => env[name]?.trim() || undefined;
  return {
    backend: "ray",
    address,
    platformUrl: opt("SVC_RAY_PLATFORM_URL"),
    volumesRoot: opt("SVC_RAY_VOLUMES"),
    launcher: opt("SVC_RAY_LAUNCHER"),
    nodeDir: opt("SVC_NODE_DIR"),
  };
}

export interface RayBackendOptions {
  /** The Ray head's dashboard (Jobs API), e.g. http://head:8265. */
  address: string;
  /** The platform's URL as the Ray nodes reach it (default: the URL it listens on). */
  platformUrl?: string;
  /** The job's entrypoint (default: this Node and this svc's `worker launch`: nodes with the same install). */
  launcher?: string;
  /** Where every node sees the platform's volumes folder (an operator-mounted shared path), if any. */
  volumesRoot?: string;
  /** Where the launcher keeps artifacts and unpacked builds on a node (default: its temp folder). */
  nodeDir?: string;
  /** How often each job's status is read. */
  pollMs?: number;
}
