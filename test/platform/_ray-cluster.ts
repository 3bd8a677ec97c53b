/**
 * A real Ray cluster on this machine for the Ray backend's test and benchmark: a head (the
 * dashboard and Jobs API, no CPU of its own, so no worker lands on it) and nodes, each started by
 * `ray start` with its own ports and temp folder, with a small footprint (logical CPUs, a 80 MB
 * object store). Each node's processes share the process group of the `ray start` that made it;
 * the processes they start later (job supervisors, launchers, workers) are found by parentage. A
 * node is killed with all of them (a machine dying), and `stop()` ends every process this cluster
 * started, by pid: never `ray stop`, which would stop every Ray on the machine.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../platform/_free-port.ts";

export interface RayNodeHandle {
  name: string;
  /** The `ray start` pid: the process group of the node's own processes. */
  pgid: number;
  /** Ray's node id (GET /api/v0/nodes). */
  id: string;
}

const ports = async (n: number) => Promise.all(Array.from({ length: n }, () => freePort()));

/** Every pid whose process group is one of `pgids`, and their descendants (Ray's workers start new sessions). */
async function processesOf(pgids: number[]): Promise<number[]> {
  const rows: Array<{ pid: number; ppid: number; pgid: number }> = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // state ppid pgrp ...
    if (fields.length > 3) rows.push({ pid: Number(entry), ppid: Number(fields[1]), pgid: Number(fields[2]) });
  }
  const found = new Set(rows.filter((r) => pgids.includes(r.pgid)).map((r) => r.pid));
  for (let grew = true; grew; ) {
    grew = false;
    for (const r of rows) if (!found.has(r.pid) && found.has(r.ppid)) found.add(r.pid), (grew = true);
  }
  return [...found];
}

/** Is any of `pids` still running (a zombie has ended: only its parent's wait is left)? */
async function running(pids: number[]): Promise<boolean> {
  for (const pid of pids) {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    if (stat && stat[stat.lastIndexOf(")") + 2] !== "Z") return true;
  }
  return false;
}

const kill = (pids: number[], signal: NodeJS.Signals) => {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      /* gone */
    }
  }
};

/**
 * `ray start`, tried up to three times: on a loaded machine a raylet can miss the 30 s Ray waits for
 * it to register (a fixed limit in ray/_private/node.py; a fresh-clone CI run saw the GCS answer no
 * call for that long twice in a row). Each try gets fresh ports and its own temp folder from
 * `argsFor(attempt)`, and starts once the failed try's processes have ended.
 */
async function rayStart(argsFor: (attempt: number) => Promise<string[]>, env: NodeJS.ProcessEnv, started: (pgid: number) => void): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const outcome = await rayStartOnce(await argsFor(attempt), env, started).then(
      (pgid) => ({ pgid }),
      (error: Error & { pgid?: number }) => ({ error }),
    );
    if ("pgid" in outcome) return outcome.pgid;
    const { error } = outcome;
    if (error.pgid === undefined || attempt === 3) throw error;
    const left = await processesOf([error.pgid]);
    kill(left, "SIGKILL");
    while (await running(left)) await new Promise((r) => setTimeout(r, 100));
  }
}

/** `started` gets the new process group at once: a cluster stopped while a node still starts stops that node too. */
function rayStartOnce(args: string[], env: NodeJS.ProcessEnv, started: (pgid: number) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    // detached: its own process group, which the node's daemons keep after it exits
    const proc = spawn("ray", ["start", ...args, "--disable-usage-stats"], {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    if (proc.pid) started(proc.pid);
    let out = "";
    proc.stdout.on("data", (d) => (out += d));
    proc.stderr.on("data", (d) => (out += d));
    proc.on("error", (error) => reject(new Error(`ray start could not run (is ray[default] installed? bash scripts/setup.sh): ${error.message}`)));
    proc.on("exit", (code) => {
      if (code === 0) return resolve(proc.pid!);
      // the process group of what it started before it failed, for the caller to end before trying again
      reject(Object.assign(new Error(`ray start ${args.join(" ")} exited ${code}:\n${out.slice(-3000)}`), { pgid: proc.pid! }));
    });
  });
}

export class RayCluster {
  readonly nodes: RayNodeHandle[] = [];
  private pgids: number[] = [];

  private constructor(
    readonly dir: string,
    readonly gcsAddress: string,
    readonly dashboard: string,
  ) {}

  /** A head with the dashboard; node death is noticed in about 3 s (health checks every second). */
  static async start(): Promise<RayCluster> {
    const dir = await mkdtemp(join(tmpdir(), "svc-ray-"));
    const [gcs, dash] = await ports(2);
    const cluster = new RayCluster(dir, `127.0.0.1:${gcs}`, `http://127.0.0.1:${dash}`);
    try {
      const pgid = await rayStart(
        async (attempt) => [
          "--head",
          "--node-ip-address",
          "127.0.0.1",
          "--port",
          String(gcs),
          "--dashboard-host",
          "127.0.0.1",
          "--dashboard-port",
          String(dash),
          "--include-dashboard",
          "true",
          "--ray-client-server-port",
          String(await freePort()),
          ...cluster.nodeArgs("head", attempt, await ports(6)),
          "--num-cpus",
          "0",
        ],
        { RAY_health_check_period_ms: "1000", RAY_health_check_failure_threshold: "3", RAY_health_check_initial_delay_ms: "1000" },
        (g) => cluster.pgids.push(g),
      );
      cluster.nodes.push({ name: "head", pgid, id: await cluster.nodeId(pgid) });
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** Below Linux's ephemeral range (32768 and up), where freePort's picks for the other ports come from. */
  private workerPortBase = 11_000 + Math.floor(Math.random() * 200) * 100;
  /** Each node's own range of worker ports (nodes may start together). */
  private nodeArgs(name: string, attempt: number, [nm, om, agent, agentGrpc, metrics, rtenv]: number[]): string[] {
    const base = (this.workerPortBase += 100);
    return [
      "--temp-dir",
      join(this.dir, attempt === 1 ? name : `${name}-${attempt}`),
      "--node-manager-port",
      String(nm),
      "--object-manager-port",
      String(om),
      "--dashboard-agent-listen-port",
      String(agent),
      "--dashboard-agent-grpc-port",
      String(agentGrpc),
      "--metrics-export-port",
      String(metrics),
      "--runtime-env-agent-port",
      String(rtenv),
      "--min-worker-port",
      String(base),
      "--max-worker-port",
      String(base + 99),
      "--object-store-memory",
      "80000000",
    ];
  }

  /** Adds a node with `cpus` logical CPUs and `gpus` declared GPUs (Ray accepts them without any). */
  async addNode(name: string, cpus: number, gpus = 0): Promise<RayNodeHandle> {
    const pgid = await rayStart(
      async (attempt) => [
        "--address",
        this.gcsAddress,
        "--node-ip-address",
        "127.0.0.1",
        ...this.nodeArgs(name, attempt, await ports(6)),
        "--num-cpus",
        String(cpus),
        "--num-gpus",
        String(gpus),
      ],
      {},
      (g) => this.pgids.push(g),
    );
    const node = { name, pgid, id: await this.nodeId(pgid) };
    this.nodes.push(node);
    return node;
  }

  /** The node id of the raylet in process group `pgid`, once the head lists it alive (matched by its node manager port). */
  private async nodeId(pgid: number): Promise<string> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const port = await this.rayletPort(pgid);
      const res = await fetch(`${this.dashboard}/nodes?view=summary`).catch(() => undefined);
      const rows = res?.ok ? ((((await res.json()) as any).data?.summary ?? []) as Array<{ raylet: Record<string, any> }>) : [];
      const found = rows.find((n) => n.raylet.state === "ALIVE" && n.raylet.nodeManagerPort === port);
      if (port !== undefined && found) return found.raylet.nodeId as string;
      if (Date.now() > deadline) throw new Error(`no alive Ray node for process group ${pgid} after 60 s`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  private async rayletPort(pgid: number): Promise<number | undefined> {
    for (const pid of await processesOf([pgid])) {
      const cmd = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
      const m = /--node_manager_port=(\d+)/.exec(cmd.replace(/\0/g, " "));
      if (cmd.includes("raylet") && m) return Number(m[1]);
    }
    return undefined;
  }

  /** The node dies as a machine would: all of its processes, the jobs' included, SIGKILLed at once. */
  async killNode(node: RayNodeHandle): Promise<void> {
    kill(await processesOf([node.pgid]), "SIGKILL");
  }

  /** Ends every process this cluster started (SIGTERM, then SIGKILL) and removes its folders. */
  async stop(): Promise<void> {
    kill(await processesOf(this.pgids), "SIGTERM");
    // up to 2 s to exit on their own (most take a fraction of it), then whatever is left is killed
    const deadline = Date.now() + 2000;
    while ((await running(await processesOf(this.pgids))) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    kill(await processesOf(this.pgids), "SIGKILL");
    await rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** Is `ray` (ray[default]) installed for the tests (scripts/setup.sh)? */
export const rayInstalled = (): Promise<boolean> => new Promise((resolve) => execFile("ray", ["--version"], (error) => resolve(!error)));
