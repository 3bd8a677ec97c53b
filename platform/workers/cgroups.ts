/**
 * A cgroup per worker, so that its flavour's memory, CPUs and a pid limit hold (./flavours.ts), its
 * out-of-memory kill can be told from a crash, and its whole process tree can be ended at once.
 * Both hierarchies: v1 (one mount per controller: memory, pids, cpu, as on this project's CI
 * machines) and v2 (the unified hierarchy, where the platform's own cgroup must be able to give
 * the controllers to its children). The platform's groups live under its own cgroup, in
 * `svc-<pid>-<n>/`; a platform that cannot make them says so once at start (docs/platform.md, "Resources").
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { WorkerLimits } from "./flavours.ts";

export type Controller = "memory" | "pids" | "cpu";
const CONTROLLERS: readonly Controller[] = ["memory", "pids", "cpu"];
const CPU_PERIOD_US = 100_000;

/** What this machine lets the platform do: which hierarchy, which controllers, and the platform's folder in each. */
export interface CgroupSupport {
  version: 1 | 2 | null;
  /** Controllers that hold a worker's limits here. */
  controllers: Controller[];
  /** v1: the platform's folder per controller; v2: one folder under "unified". */
  dirs: Partial<Record<Controller | "unified", string>>;
  /** Why none (or not all) of the limits hold. */
  why?: string;
}

const read = (path: string): string | undefined => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
};

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code ?? String(error);

/** The mounts of /proc/self/mountinfo: mount point, the mounted cgroup's root, type and options. */
function cgroupMounts(): Array<{ point: string; root: string; type: string; options: string[] }> {
  const out = [];
  for (const line of (read("/proc/self/mountinfo") ?? "").split("\n")) {
    const [left, right] = line.split(" - ");
    if (!left || !right) continue;
    const fields = left.split(" ");
    const [type, , superOptions = ""] = right.split(" ");
    if (type === "cgroup" || type === "cgroup2") out.push({ point: fields[4]!, root: fields[3]!, type, options: superOptions.split(",") });
  }
  return out;
}

/** This process's cgroup path per v1 controller, and its v2 path under "". */
function ownPaths(): Map<string, string> {
  const paths = new Map<string, string>();
  for (const line of (read("/proc/self/cgroup") ?? "").split("\n")) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    for (const name of match[1]!.split(",")) paths.set(name, match[2]!);
  }
  return paths;
}

/** Where our own cgroup appears under a mount (the mount may show a sub-tree: its root). */
const under = (mount: { point: string; root: string }, own: string) => join(mount.point, own.startsWith(mount.root) ? own.slice(mount.root.length) : own);

function makeDir(dir: string): string | undefined {
  try {
    mkdirSync(dir, { recursive: true });
    return undefined;
  } catch (error) {
    return errorCode(error);
  }
}

/** Platforms started in this process (tests start several): each gets a folder of its own. */
let platformsInProcess = 0;

/** Finds what this machine allows and makes the platform's folders (`svc-<pid>-<n>`). */
export function detectCgroups(name = `svc-${process.pid}-${++platformsInProcess}`): CgroupSupport {
  const mounts = cgroupMounts();
  const own = ownPaths();
  const v1 = mounts.filter((m) => m.type === "cgroup" && CONTROLLERS.some((c) => m.options.includes(c)));
  if (v1.length > 0) {
    const support: CgroupSupport = { version: 1, controllers: [], dirs: {} };
    const refused: string[] = [];
    for (const controller of CONTROLLERS) {
      const mount = v1.find((m) => m.options.includes(controller));
      if (!mount) continue;
      const dir = join(under(mount, own.get(controller) ?? "/"), name);
      const failed = makeDir(dir);
      if (failed) refused.push(`${controller} (${failed} at ${dir})`);
      else {
        support.controllers.push(controller);
        support.dirs[controller] = dir;
      }
    }
    if (refused.length > 0) support.why = `cgroup v1 refused ${refused.join(", ")}`;
    if (support.controllers.length === 0) support.version = null;
    return support;
  }
  const unified = mounts.find((m) => m.type === "cgroup2");
  if (!unified) return { version: null, controllers: [], dirs: {}, why: "no cgroup hierarchy is mounted" };
  return detectV2(under(unified, own.get("") ?? "/"), name);
}

/**
 * v2: our cgroup must hand memory, pids and cpu to its children (`cgroup.subtree_control`), which
 * the kernel refuses while it holds processes. Where the platform is the only one there, it moves
 * into a leaf of its own first (as a container's init does); otherwise it says why.
 */
function detectV2(ownDir: string, name: string): CgroupSupport {
  const available = (read(join(ownDir, "cgroup.controllers")) ?? "").split(/\s+/);
  const controllers = CONTROLLERS.filter((c) => available.includes(c));
  if (controllers.length === 0) return { version: null, controllers: [], dirs: {}, why: `cgroup v2 gives no memory, pids or cpu controller to ${ownDir}` };
  const enable = () => writeFileSync(join(ownDir, "cgroup.subtree_control"), controllers.map((c) => `+${c}`).join(" "));
  try {
    enable();
  } catch (error) {
    if (errorCode(error) !== "EBUSY")
      return { version: null, controllers: [], dirs: {}, why: `cgroup v2 refused controllers under ${ownDir} (${errorCode(error)})` };
    const procs = (read(join(ownDir, "cgroup.procs")) ?? "").split("\n").filter(Boolean);
    if (procs.some((pid) => Number(pid) !== process.pid)) {
      return {
        version: null,
        controllers: [],
        dirs: {},
        why: `cgroup v2: ${ownDir} holds other processes, so it cannot give its controllers to workers (start the platform in a cgroup of its own, e.g. systemd-run --scope -p Delegate=yes)`,
      };
    }
    try {
      const leaf = join(ownDir, `${name}-platform`);
      mkdirSync(leaf, { recursive: true });
      writeFileSync(join(leaf, "cgroup.procs"), String(process.pid));
      enable();
    } catch (inner) {
      return { version: null, controllers: [], dirs: {}, why: `cgroup v2 refused controllers under ${ownDir} (${errorCode(inner)})` };
    }
  }
  const dir = join(ownDir, name);
  const failed = makeDir(dir);
  if (failed) return { version: null, controllers: [], dirs: {}, why: `cgroup v2 refused ${dir} (${failed})` };
  try {
    writeFileSync(join(dir, "cgroup.subtree_control"), controllers.map((c) => `+${c}`).join(" "));
  } catch (error) {
    return { version: null, controllers: [], dirs: {}, why: `cgroup v2 refused controllers under ${dir} (${errorCode(error)})` };
  }
  return { version: 2, controllers, dirs: { unified: dir } };
}

/** One worker's cgroup: its folders, how a process joins it, its limits, its OOM kills, the end of its tree. */
export class WorkerCgroup {
  /** The files a starting process writes its pid to (./launch-limits.ts: before it execs the sandbox). */
  readonly procsFiles: string[];
  private readonly dirs: string[];
  /** The folder of each controller that holds here (v2: the same one for all). */
  private readonly byController: Partial<Record<Controller, string>> = {};

  constructor(
    private readonly support: CgroupSupport,
    workerId: string,
  ) {
    for (const controller of support.controllers)
      this.byController[controller] = join(support.version === 2 ? support.dirs.unified! : support.dirs[controller]!, workerId);
    this.dirs = [...new Set(Object.values(this.byController))];
    this.procsFiles = this.dirs.map((dir) => join(dir, "cgroup.procs"));
  }

  private dir(controller: Controller): string | undefined {
    return this.byController[controller];
  }

  /** Makes the folders and writes the limits; throws when the kernel refuses (the worker then does not start). */
  create(limits: WorkerLimits): void {
    for (const dir of this.dirs) mkdirSync(dir, { recursive: true });
    const memory = this.dir("memory");
    const pids = this.dir("pids");
    const cpu = this.dir("cpu");
    const quota = Math.round(limits.vcpus * CPU_PERIOD_US);
    if (this.support.version === 2) {
      if (memory) {
        writeFileSync(join(memory, "memory.max"), String(limits.memoryBytes));
        if (existsSync(join(memory, "memory.swap.max"))) writeFileSync(join(memory, "memory.swap.max"), "0");
        if (existsSync(join(memory, "memory.oom.group"))) writeFileSync(join(memory, "memory.oom.group"), "1"); // the kernel ends the whole worker, not one thread's process
      }
      if (pids) writeFileSync(join(pids, "pids.max"), String(limits.pids));
      if (cpu) writeFileSync(join(cpu, "cpu.max"), `${quota} ${CPU_PERIOD_US}`);
      return;
    }
    if (memory) {
      writeFileSync(join(memory, "memory.limit_in_bytes"), String(limits.memoryBytes));
      if (existsSync(join(memory, "memory.memsw.limit_in_bytes"))) writeFileSync(join(memory, "memory.memsw.limit_in_bytes"), String(limits.memoryBytes)); // no swap past it
    }
    if (pids) writeFileSync(join(pids, "pids.max"), String(limits.pids));
    if (cpu) {
      writeFileSync(join(cpu, "cpu.cfs_period_us"), String(CPU_PERIOD_US));
      writeFileSync(join(cpu, "cpu.cfs_quota_us"), String(quota));
    }
  }

  /** Moves a process in (a worker without the sandbox, before its interpreter can fork). */
  join(pid: number): void {
    for (const file of this.procsFiles) writeFileSync(file, String(pid));
  }

  /** How many of its processes the kernel killed for memory. */
  oomKills(): number {
    const memory = this.dir("memory");
    if (!memory) return 0;
    const text = read(join(memory, this.support.version === 2 ? "memory.events" : "memory.oom_control")) ?? "";
    return Number(/^oom_kill (\d+)/m.exec(text)?.[1] ?? 0);
  }

  /** Its memory in use now, and the most it used (v1; v2 since 5.19), in bytes. */
  memoryUsage(): { current: number; peak?: number } | undefined {
    const memory = this.dir("memory");
    if (!memory) return undefined;
    const v2 = this.support.version === 2;
    const current = Number(read(join(memory, v2 ? "memory.current" : "memory.usage_in_bytes")));
    const peak = Number(read(join(memory, v2 ? "memory.peak" : "memory.max_usage_in_bytes")));
    return Number.isFinite(current) ? { current, ...(Number.isFinite(peak) && { peak }) } : undefined;
  }

  /** Pids of every process in it (threads of a process count once). */
  processes(): number[] {
    const pids = new Set<number>();
    for (const file of this.procsFiles) for (const line of (read(file) ?? "").split("\n")) if (line) pids.add(Number(line));
    return [...pids];
  }

  /** SIGKILL to every process in it, again until none is left (a fork between a read and a kill); v2's cgroup.kill does it at once. */
  async killAll(deadlineMs = 3000): Promise<boolean> {
    if (this.support.version === 2 && existsSync(join(this.dirs[0]!, "cgroup.kill"))) {
      try {
        writeFileSync(join(this.dirs[0]!, "cgroup.kill"), "1");
      } catch {
        /* gone */
      }
    }
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      const left = this.processes();
      if (left.length === 0) return true;
      if (Date.now() > deadline) return false;
      for (const pid of left) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* already gone */
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Removes its folders (a folder with a process left in it stays: the kernel refuses). */
  remove(): void {
    for (const dir of this.dirs) tryRmdir(dir);
  }
}

const tryRmdir = (dir: string) => {
  try {
    rmdirSync(dir);
  } catch {
    /* a process still in it, or gone */
  }
};

/** Removes a platform's folder: its empty worker folders, then itself (one with a process left in it stays). */
function removeFolder(folder: string): void {
  if (!existsSync(folder)) return;
  for (const child of readdirSync(folder, { withFileTypes: true })) if (child.isDirectory()) tryRmdir(join(folder, child.name));
  tryRmdir(folder);
}

/** The folders of platforms that are gone (`svc-<pid>-<n>` of no live process). */
export function removeStaleCgroups(support: CgroupSupport): void {
  for (const dir of Object.values(support.dirs)) {
    const parent = join(dir, "..");
    for (const entry of readdirSync(parent)) {
      const pid = /^svc-(\d+)-\d+$/.exec(entry)?.[1];
      if (pid && Number(pid) !== process.pid && !existsSync(`/proc/${pid}`)) removeFolder(join(parent, entry));
    }
  }
}

/** This platform's folders, at its close. */
export function removeOwnCgroups(support: CgroupSupport): void {
  for (const dir of Object.values(support.dirs)) removeFolder(dir);
}
