/**
 * The Ray backend (`svc platform start --workers ray --ray-address http://<head>:8265`): each
 * worker it places (./backend.ts) is one Ray job, submitted through Ray's REST Jobs API with the
 * flavour's asks from the launch plan as `entrypoint_num_cpus`, `entrypoint_num_gpus` and
 * `entrypoint_memory`, so Ray picks the node. The job's entrypoint is the worker launcher (`svc
 * worker launch`, ./launcher.ts) on that node; it gets only the worker's id, its one-time launch
 * ticket and the platform's URL, and redeems the ticket for the rest of the plan (./remote-launch.ts).
 * Stopping the worker stops its job; a job that ends (stopped, failed, or its node died) is the
 * worker's exit (`hooks.exited`), and the supervisor hands its jobs back. A job Ray cannot place yet
 * makes the worker `throttled`, with a log line naming what no node has free.
 * docs/platform.md, "Workers on a Ray cluster".
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { EndpointRecord } from "../../store/index.ts";
import type { RayBackendOptions } from "../../workers-option.ts";
import type { WorkerInfo } from "../worker-info.ts";
import type { LaunchPlan, WorkerReach } from "../launch-plan.ts";
import type { BackendHooks, ClusterView, RemoteRun, WorkerBackend } from "./backend.ts";
import { remoteLaunchOf } from "./remote-launch.ts";
import { RAY_FINAL, RayJobsApi, type RayJob, type RayNode } from "./ray-jobs.ts";
import type { WorkerResources } from "./resources.ts";
import { sha256Hex } from "../../_ids.ts";

/** How long a job may stay PENDING (runtime env, scheduling) before it counts as not placed. */
const PLACE_GRACE_MS = 2000;
/** How long a job may wait for Ray to start it on a node with room before the wait is logged. */
const STARTING_GRACE_MS = 15_000;

const shellQuote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** `node <svc>/bin/svc.mjs worker launch`: the svc this platform runs, found from this file up. */
function defaultLauncher(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6 && !existsSync(join(dir, "bin", "svc.mjs")); i++) dir = dirname(dir);
  return [process.execPath, join(dir, "bin", "svc.mjs"), "worker", "launch"].map(shellQuote).join(" ");
}

interface Tracked {
  run: RemoteRun;
  w: WorkerInfo;
  hooks: BackendHooks;
  need: WorkerResources;
  submittedAt: number;
  timer?: NodeJS.Timeout;
  stopping?: Promise<void>;
  /** A stop was asked for: one that failed is asked again at the next poll, until Ray says the job ended. */
  stopAsked?: boolean;
  unreachable: boolean;
  done: boolean;
}

export class RayWorkers implements WorkerBackend {
  readonly name = "ray" as const;
  readonly api: RayJobsApi;
  private readonly runs = new Map<string, Tracked>();
  private readonly launcher: string;
  private closed = false;

  constructor(
    private readonly options: RayBackendOptions,
    /** The platform's own URL (known once it listens), the default for `platformUrl`. */
    private readonly platformUrl: () => string,
    /** Marks this platform's jobs (Ray metadata), so that a restarted platform finds its leftovers. */
    private readonly platformId: string,
  ) {
    this.api = new RayJobsApi(options.address.replace(/\/+$/, ""));
    this.launcher = options.launcher ?? defaultLauncher();
  }

  nodeApiBase(): string {
    return this.options.platformUrl ?? this.platformUrl();
  }

  /** The nodes call the platform at its URL for them; the volumes are under the operator's shared path; a ticket opens the launch. */
  reach(): WorkerReach {
    return { apiBase: this.nodeApiBase(), here: false, volumesRoot: this.options.volumesRoot, ticket: true };
  }

  /** Load-balanced workers stay local: the LB proxy reaches them on this machine's loopback. */
  places(endpoint: EndpointRecord): boolean {
    return endpoint.type === "QB";
  }

  async start(plan: LaunchPlan, w: WorkerInfo, hooks: BackendHooks): Promise<void> {
    if (!plan.ticket) throw new Error("a Ray worker's plan needs its launch ticket");
    if (hooks.gone()) throw new Error("stopped before it started");
    hooks.started(null, Date.now());
    const need = plan.asks;
    const submissionId = `svc-${w.id}`;
    const launch = remoteLaunchOf(plan);
    const run: RemoteRun = { backend: "ray", runId: submissionId, buildId: launch.buildId, unplaced: false, launch, signal: () => undefined };
    const tracked: Tracked = { run, w, hooks, need, submittedAt: Date.now(), unreachable: false, done: false };
    run.signal = () => void this.stop(tracked);
    // Ray's Jobs API shows a job's variables to whoever reaches it: a ticket redeemed once, never the token.
    const envVars: Record<string, string> = { SVC_WORKER_ID: w.id, SVC_LAUNCH_TICKET: plan.ticket, SVC_API_BASE: this.nodeApiBase() };
    if (this.options.nodeDir) envVars.SVC_NODE_DIR = this.options.nodeDir;
    await this.api.submit({
      submissionId,
      entrypoint: this.launcher,
      envVars,
      numCpus: need.cpus,
      numGpus: need.gpus,
      memoryBytes: need.memoryBytes,
      metadata: { svc_platform: this.platformId, svc_worker: w.id, svc_endpoint: plan.endpoint.id },
    });
    this.runs.set(submissionId, tracked);
    hooks.log(`worker ${w.id} submitted as Ray job ${submissionId} (${describe(need)}) to ${this.api.address}`);
    this.poll(tracked);
    w.remote = run;
    if (hooks.gone()) run.signal("SIGKILL"); // stopped while it was being submitted
  }

  private poll(t: Tracked): void {
    t.timer = setTimeout(() => void this.check(t).finally(() => !t.done && !this.closed && this.poll(t)), this.options.pollMs ?? 500);
    t.timer.unref();
  }

  private async check(t: Tracked): Promise<void> {
    let job: RayJob | undefined;
    try {
      job = await this.api.job(t.run.runId);
    } catch (error) {
      if (!t.unreachable) t.hooks.log(`cannot read Ray job ${t.run.runId}: ${(error as Error).message}`);
      t.unreachable = true;
      return;
    }
    t.unreachable = false;
    if (!job) return this.finish(t, "its Ray job is gone from the cluster");
    if (job.status === "PENDING" && !t.run.unplaced && Date.now() - t.submittedAt > PLACE_GRACE_MS) {
      const why = await this.missing(t);
      if (why === undefined || t.done || t.run.node) return; // a node has room: Ray is still starting the job
      t.hooks.log(`worker ${t.w.id} cannot be placed yet: ${why}`); // the line first: /health says throttled once it is there
      t.run.unplaced = true;
    }
    if (job.status === "RUNNING" && !t.run.node && job.driverNodeId) {
      t.run.unplaced = false;
      t.run.node = job.driverNodeId;
      t.hooks.log(`worker ${t.w.id} runs on Ray node ${job.driverNodeId}`);
    }
    if (t.stopAsked && !t.stopping && !RAY_FINAL.has(job.status)) void this.stop(t);
    if (RAY_FINAL.has(job.status))
      this.finish(t, `Ray job ${job.status}${job.exitCode !== null ? `, exit code ${job.exitCode}` : ""}${job.message ? `: ${job.message}` : ""}`);
  }

  private finish(t: Tracked, how: string): void {
    if (t.done) return;
    t.done = true;
    clearTimeout(t.timer);
    this.runs.delete(t.run.runId);
    t.hooks.exited(how);
  }

  /**
   * What no node has for the worker: none is that big (infeasible), or those that are are busy
   * with this platform's placed workers. Undefined while one of them has room: Ray takes a few
   * seconds to start a job's supervisor on an idle node, which is no reason to say it cannot be
   * placed (for STARTING_GRACE_MS; past that, Ray's own work may be holding the room).
   */
  private async missing(t: Tracked): Promise<string | undefined> {
    const need = t.need;
    let nodes: RayNode[];
    try {
      nodes = (await this.api.nodes()).filter((n) => n.alive);
    } catch (error) {
      return `Ray does not list its nodes (${(error as Error).message})`;
    }
    const fits = nodes.filter((n) => (n.total.CPU ?? 0) >= need.cpus && (n.total.GPU ?? 0) >= need.gpus && (n.total.memory ?? 0) >= need.memoryBytes);
    const room = fits.filter((n) => this.hasRoom(n, need));
    if (room.length > 0 && Date.now() - t.submittedAt < STARTING_GRACE_MS) return undefined;
    if (room.length > 0)
      return `Ray has not started it in ${STARTING_GRACE_MS / 1000} s although ${room.length} node(s) with ${describe(need)} have room for it beside this platform's workers (other Ray work may hold it); it starts when Ray places it`;
    if (fits.length > 0) return `the ${fits.length} Ray node(s) with ${describe(need)} have none of it free; it starts when one frees`;
    const most = (key: string) => Math.max(0, ...nodes.map((n) => n.total[key] ?? 0));
    const short = [
      need.gpus > most("GPU") ? `${need.gpus} GPU(s) (the most any node has: ${most("GPU")})` : "",
      need.cpus > most("CPU") ? `${need.cpus} CPU(s) (the most: ${most("CPU")})` : "",
      need.memoryBytes > most("memory") ? `${gib(need.memoryBytes)} memory (the most: ${gib(most("memory"))})` : "",
    ].filter(Boolean);
    return `no Ray node of ${nodes.length} alive has ${short.join(", ") || describe(need)}: add such a node, or deploy the endpoint with less`;
  }

  /** Whether `node` has `need` left beside the workers this platform placed there. */
  private hasRoom(node: RayNode, need: WorkerResources): boolean {
    const used = { cpus: 0, gpus: 0, memoryBytes: 0 };
    for (const other of this.runs.values()) {
      if (other.run.node !== node.id) continue;
      used.cpus += other.need.cpus;
      used.gpus += other.need.gpus;
      used.memoryBytes += other.need.memoryBytes;
    }
    const left = (key: string, taken: number) => (node.total[key] ?? 0) - taken;
    return left("CPU", used.cpus) >= need.cpus && left("GPU", used.gpus) >= need.gpus && left("memory", used.memoryBytes) >= need.memoryBytes;
  }

  /**
   * Asks Ray to stop the job. Ray cannot stop a job it has not placed (the stop waits for the job's
   * supervisor to start), so an unplaced worker exits here at once: its token ends with it, and the
   * launcher, should Ray place the job later, is refused its launch and exits.
   */
  private stop(t: Tracked): Promise<void> {
    t.stopAsked = true;
    t.stopping ??= this.api.stop(t.run.runId).catch((error) => {
      t.stopping = undefined; // the next poll asks again (a busy head can miss the call's 15 s)
      t.hooks.log(`stopping Ray job ${t.run.runId} failed (asked again at the next poll): ${(error as Error).message}`);
    });
    if (!t.run.node) this.finish(t, "stopped before Ray placed it; its Ray job ends when placed");
    return t.stopping;
  }

  async cluster(workers: Iterable<WorkerInfo>): Promise<ClusterView> {
    const nodes = await this.api.nodes();
    const view: ClusterView = {
      backend: "ray",
      address: this.api.address,
      nodes: nodes.map((n) => ({
        id: n.id,
        address: n.ip,
        alive: n.alive,
        head: n.head,
        cpus: n.total.CPU ?? 0,
        gpus: n.total.GPU ?? 0,
        memoryBytes: n.total.memory ?? 0,
        workers: [],
      })),
      unplaced: [],
    };
    for (const w of workers) {
      if (!w.remote) continue;
      const node = w.remote.node ? view.nodes.find((n) => n.id === w.remote!.node) : undefined;
      (node ? node.workers : view.unplaced).push({ workerId: w.id, endpointId: w.endpointId });
    }
    return view;
  }

  /** Stops the Ray jobs of an earlier run of this platform (killed, so it could not stop them). */
  async stopLeftovers(): Promise<number> {
    const jobs = await this.api.jobs();
    const left = jobs.filter((j) => j.metadata.svc_platform === this.platformId && !RAY_FINAL.has(j.status));
    await Promise.all(left.map((j) => this.api.stop(j.submissionId)));
    return left.length;
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.runs.values()];
    for (const t of all) clearTimeout(t.timer);
    await Promise.all(all.map((t) => this.stop(t)));
  }
}

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;
const describe = (need: WorkerResources) =>
  [`${need.cpus} CPU`, need.gpus > 0 ? `${need.gpus} GPU` : "", need.memoryBytes > 0 ? `${gib(need.memoryBytes)} memory` : ""].filter(Boolean).join(", ");

/**
 * The Ray backend of a starting platform: RAY_UNREACHABLE unless the address answers as Ray's
 * dashboard; the jobs a killed earlier run of this platform (same state folder) left are stopped.
 */
export async function connectRay(
  options: RayBackendOptions,
  platformUrl: () => string,
  platform: { dataDir: string; log: (line: string) => void },
): Promise<RayWorkers> {
  const ray = new RayWorkers(options, platformUrl, sha256Hex(platform.dataDir).slice(0, 16));
  const version = await ray.api.version();
  const left = await ray.stopLeftovers();
  platform.log(
    `workers run as Ray jobs on the cluster at ${ray.api.address} (Ray ${version})${left > 0 ? `; stopped ${left} job(s) an earlier run of this platform left` : ""}`,
  );
  // What the platform cannot check from here, said where the operator looks.
  platform.log(
    `warning: a worker on a Ray node has a network namespace of its own (where the node can make one): the node's own addresses, and so a dashboard or GCS on that node, are out of its reach, but with egress it reaches other machines, the Ray head (${ray.api.address}) among them when it is another machine. ` +
      "Job submission is cluster admin: keep the dashboard's port and the GCS off the network tenants' code reaches (docs/platform.md, \"Workers on a Ray cluster\").",
  );
  return ray;
}
