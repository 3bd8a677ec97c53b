/**
 * The supervisor's side of resource limits: what this machine enforces (said once at start), each
 * worker's limits (./flavours.ts) and cgroup (./cgroups.ts), how its process joins the cgroup
 * before anything of it runs, and what `/health` and `svc platform status` show.
 * docs/platform.md, "Resources".
 */
import { errors } from "../../core/errors.ts";
import type { EndpointRecord } from "../store/index.ts";
import { detectCgroups, removeOwnCgroups, removeStaleCgroups, WorkerCgroup, type CgroupSupport, type Controller } from "./cgroups.ts";
import type { WorkerLimitCaps } from "../limit-options.ts";
import { formatBytes, hostSize, workerLimits, type WorkerLimits } from "./flavours.ts";

/** What a worker's limits are and which of them hold here (/health, `svc platform status`). */
export interface LimitsView extends WorkerLimits {
  /** The limits that hold: `memory`, `pids`, `cpu` (cgroup), `tmp` (the sandbox's sized /tmp). */
  enforced: string[];
  /** `cgroup v1`, `cgroup v2`, or why none holds. */
  by: string;
}

/**
 * The launch's prefix that puts the process in its cgroup, then execs the rest: `sh` writes its own
 * pid to each `cgroup.procs` first, so bwrap and everything it starts are inside from their start.
 */
const JOIN_SCRIPT = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
export const joinPrefix = (cgroup: WorkerCgroup): string[] => ["/bin/sh", "-c", JOIN_SCRIPT, "svc-worker", ...cgroup.procsFiles, "--"];

export class WorkerResources {
  readonly support: CgroupSupport;

  constructor(
    private readonly settings: { cgroups: boolean; workerLimits: WorkerLimitCaps; isolation: "auto" | "strict" },
    private readonly log: (line: string) => void,
  ) {
    this.support = settings.cgroups ? detectCgroups() : { version: null, controllers: [], dirs: {}, why: "cgroups are turned off (SVC_WORKER_CGROUPS=off)" };
    if (this.support.version) removeStaleCgroups(this.support);
    log(this.summary());
  }

  /** The one line the platform says at start. */
  summary(): string {
    const { version, controllers, why } = this.support;
    if (!version) {
      const strict =
        this.settings.isolation === "strict"
          ? "isolation is strict, so no worker will start"
          : "a worker can use all of the machine's memory, CPUs and processes";
      return `warning: worker limits: none hold (${why}): ${strict}. docs/platform.md, "Resources"`;
    }
    const missing = (["memory", "pids", "cpu"] as Controller[]).filter((c) => !controllers.includes(c));
    return `worker limits: cgroup v${version} holds ${controllers.join(", ")} per worker (the flavour's memory and vCPUs; ${this.limitsOf({ gpuIds: null, gpuCount: null, instanceIds: null }, 0).pids} processes)${missing.length ? `; not ${missing.join(", ")}: ${why}` : ""}`;
  }

  /** The limits of a worker of this endpoint, `gpus` being how many the machine has. */
  limitsOf(endpoint: Pick<EndpointRecord, "gpuIds" | "gpuCount" | "instanceIds">, gpus: number): WorkerLimits {
    return workerLimits(endpoint, hostSize(gpus), this.settings.workerLimits);
  }

  view(limits: WorkerLimits, sandboxed: boolean | undefined): LimitsView {
    const enforced: string[] = [...this.support.controllers];
    if (sandboxed !== false) enforced.push("tmp");
    return { ...limits, enforced, by: this.support.version ? `cgroup v${this.support.version}` : `no cgroup: ${this.support.why}` };
  }

  /** The worker's cgroup with its limits written; undefined where none can be made (strict isolation refuses then). */
  open(workerId: string, limits: WorkerLimits): WorkerCgroup | undefined {
    const missing = this.support.version ? (["memory", "pids"] as Controller[]).filter((c) => !this.support.controllers.includes(c)) : [];
    if (this.settings.isolation === "strict" && (!this.support.version || missing.length > 0))
      throw errors.WORKER_LIMITS_UNAVAILABLE(this.support.why ?? `no ${missing.join(", ")} controller`);
    if (!this.support.version) return undefined;
    const cgroup = new WorkerCgroup(this.support, workerId);
    try {
      cgroup.create(limits);
      return cgroup;
    } catch (error) {
      cgroup.remove();
      const why = `the kernel refused worker ${workerId}'s cgroup (${(error as Error).message})`;
      if (this.settings.isolation === "strict") throw errors.WORKER_LIMITS_UNAVAILABLE(why);
      this.log(`warning: ${why}: it runs without its limits`);
      return undefined;
    }
  }

  /** What a worker (or shell) left behind in its cgroup (a daemon outside the sandbox's pid namespace) ends with it; then the cgroup goes. */
  async end(cgroup: WorkerCgroup): Promise<void> {
    await cgroup.killAll();
    cgroup.remove();
  }

  /** The error a job gets when its worker was killed for memory. */
  outOfMemory(limits: WorkerLimits) {
    return errors.WORKER_OUT_OF_MEMORY(formatBytes(limits.memoryBytes), limits.flavour);
  }

  close(): void {
    if (this.support.version) removeOwnCgroups(this.support);
  }
}
