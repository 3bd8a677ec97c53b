/**
 * Warm spares: the dev server's reload waits on a fresh worker (bwrap, the cgroup, the network
 * namespace, the interpreter and the modules it imports: ~300 ms of the ~450 ms from save to new
 * output, issue 42). A spare is that much started ahead, for one endpoint: its sandbox as the
 * endpoint's next worker gets it (its app's pool uid, its cgroup and limits, its own network
 * namespace and channel, its volume), the interpreter started with the standard library's modules
 * imported and, once the platform compiled it, the svc runtime's own copy (./spare-bootstrap.ts,
 * ./runtime-bytecode.ts), and an empty folder at /app. No build, no token, no key, no secret: until
 * a worker of that endpoint claims it, there is nothing in it to see. The runtime imported ahead is
 * kept when the build's svc/ is that runtime byte for byte, else dropped for the build's own.
 *
 * A claim (the supervisor's next worker of the endpoint) checks that the spare was made for the
 * same endpoint and the same sandbox (image, interpreter, user, volume, network, limits, the
 * variables the interpreter reads when it starts); then the platform puts that worker's build in
 * the spare's folder (./spare-stage.ts) and writes the worker's variables (its id, token, key,
 * secrets) to its stdin: it runs the handler as a worker started cold would. One claim per spare:
 * once it ran a build it is that worker, and it exits as that worker. A spare that does not match
 * is ended; a new one starts a moment after a worker of the endpoint is ready (not before: on two
 * cores it would slow that worker's start, nor at once: its first job).
 *
 * Which endpoints: those outside environments whose workers run locally in the sandbox without a
 * GPU, and that are the dev server's (`live-<name>` for the manifest's `<name>`: ./target.ts) or
 * were moved to another build in place. At most MAX_SPARES at once. SVC_WARM_SPARES=off: none.
 * docs/platform.md, "Warm spares".
 */
import type { ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { getPriority, setPriority } from "node:os";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { newId } from "../../_ids.ts";
import type { EndpointRecord } from "../../store/index.ts";
import type { WorkerCgroup } from "../cgroups.ts";
import type { WorkerLimits } from "../flavours.ts";
import { type ImageEnvironments, type LaunchRequest, sandboxEnv, type WorkerLaunch } from "../image-env.ts";
import { SANDBOX_RUNTIME_DIR } from "../sandbox.ts";
import { spawnLaunch } from "./spawn.ts";
import type { LinkedRuntime, RuntimeBytecode } from "./runtime-bytecode.ts";
import { SPARE_BOOTSTRAP } from "./spare-bootstrap.ts";
import { fillStage, makeStage } from "./spare-stage.ts";
import type { WorkerTarget } from "../target.ts";
import { addTunnels, closeChannel } from "../worker-channel.ts";
import { readChildPid } from "../worker-process.ts";
import { joinPrefix, type WorkerResources } from "../worker-resources.ts";

/** Under the platform's state folder: one folder per spare, its /app. */
const SPARES_DIR = "spares";

/**
 * A spare starts at the lowest CPU priority (where the platform may raise it back: as root), so that
 * it takes only idle CPU from the worker that just got ready and from the next rebuild; its
 * interpreter gets the platform's priority back when it is claimed.
 */
const SPARE_NICE = 19;

/** From a worker's ready to its endpoint's next spare's start: past the ready worker's first job (a dev reload's answer). */
const SPARE_START_DELAY_MS = 250;

/** Spares held at once, across endpoints (each is an interpreter, a cgroup and a network namespace). */
export const MAX_SPARES = 4;

/** Variables an interpreter (or the C library under it) reads when it starts: a spare and its claimer must agree on them. */
const STARTUP_VARIABLE = /^(PYTHON|LD_|LC_|LANG$|LANGUAGE$|TZ$|MALLOC_|PATH$)/;

/** What the interpreter of a launch starts with. */
export function startupEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(env).sort()) if (STARTUP_VARIABLE.test(key) && env[key] !== undefined) out[key] = env[key]!;
  return out;
}

/** Everything of a launch but its build and its worker: equal keys, the same sandbox. */
function shapeKey(endpointId: string, req: LaunchRequest, limits: WorkerLimits): string {
  const net = req.network;
  return JSON.stringify([
    endpointId,
    req.image,
    req.python,
    req.user ?? null,
    req.volumeDir ?? null,
    req.tmpBytes ?? null,
    net ? [net.platformSocket ?? null, net.apiBase, net.lb, net.egress] : null,
    limits,
    startupEnv(req.env),
  ]);
}

interface Spare {
  id: string;
  endpointId: string;
  key: string;
  stage: string;
  /** Its interpreter (the runtime's bytecode is per interpreter). */
  executable: string;
  /** It imported the platform's svc runtime while it waited. */
  runtimeAhead: boolean;
  proc: ChildProcess;
  launch: WorkerLaunch;
  cgroup?: WorkerCgroup;
  /** The interpreter's pid (bwrap's info fd). */
  holder: { pid?: number };
  /** Resolves once its pid is known or it exited. */
  pidKnown: Promise<void>;
  startedAt: number;
  /** The priority its interpreter gets back when claimed, if it was lowered. */
  priority?: number;
  claimed: boolean;
  exited: boolean;
  /** Its clean-up once it exited (./spare-stage.ts's folder; an unclaimed one's channel and cgroup). */
  cleaned?: Promise<void>;
}

/** A claimed spare, as the supervisor's launch would have made it. */
export interface ClaimedSpare {
  proc: ChildProcess;
  launch: WorkerLaunch;
  cgroup?: WorkerCgroup;
  pid?: number;
  /** Ends it (its claimer stopped before it started). */
  discard(): void;
}

export interface WarmSparesDeps {
  images: ImageEnvironments;
  /** The svc runtime's .pyc files, linked into a claimed spare's build (./runtime-bytecode.ts). */
  bytecode: RuntimeBytecode;
  resources: WorkerResources;
  dataDir: string;
  /** A line in the endpoint's logs. */
  log(endpointId: string, line: string): void;
}

interface Template {
  request: LaunchRequest;
  limits: WorkerLimits;
  buildId: string;
  eligible: boolean;
}

/** Lowers the process's priority (bwrap and what it starts inherit it); answers the priority it had. */
function lower(pid: number): number | undefined {
  try {
    const before = getPriority();
    setPriority(pid, SPARE_NICE);
    return before;
  } catch {
    return undefined;
  }
}

function raise(pid: number, priority: number): void {
  try {
    setPriority(pid, priority);
  } catch {
    /* gone: its exit says so */
  }
}

export class WarmSpares {
  private readonly spares = new Map<string, Spare>();
  /** Each endpoint's last launch: the next spare is made like it. */
  private readonly templates = new Map<string, Template>();
  private readonly starting = new Map<string, Promise<void>>();
  /** Refills waiting out SPARE_START_DELAY_MS: close() ends them at once. */
  private readonly pauses = new Set<() => void>();
  private closed = false;

  constructor(private readonly deps: WarmSparesDeps) {
    rmSync(join(deps.dataDir, SPARES_DIR), { recursive: true, force: true }); // a platform killed earlier left its spares' folders
  }

  private get enabled(): boolean {
    return process.env.SVC_WARM_SPARES !== "off" && !this.closed;
  }

  /**
   * A worker of `endpoint` launches `request` for `target`'s build: the endpoint's spare, filled with
   * that build and told to go, when it was made for this endpoint and sandbox; else undefined (a
   * cold start). Remembers the launch for the endpoint's next spare.
   */
  async claim(endpoint: EndpointRecord, target: WorkerTarget, request: LaunchRequest, limits: WorkerLimits): Promise<ClaimedSpare | undefined> {
    const before = this.templates.get(endpoint.id);
    const movedInPlace = before !== undefined && before.buildId !== target.build.id;
    const eligible = !endpoint.environmentId && !request.gpu && !request.command && (movedInPlace || before?.eligible || target.manifestName !== endpoint.name);
    this.templates.set(endpoint.id, { request, limits, buildId: target.build.id, eligible });
    const spare = this.spares.get(endpoint.id);
    if (!spare || !this.enabled) return undefined;
    this.spares.delete(endpoint.id);
    if (spare.exited || spare.key !== shapeKey(endpoint.id, request, limits) || !eligible) {
      this.end(spare, "the endpoint's workers changed");
      return undefined;
    }
    const t0 = performance.now();
    let runtime: LinkedRuntime | undefined;
    try {
      await spare.pidKnown; // a spare still starting: its signals must reach the interpreter
      await fillStage(request.buildDir, spare.stage);
      runtime = await this.deps.bytecode.link(spare.executable, spare.stage);
      if (spare.launch.channel) await addTunnels(spare.launch.channel, request.network?.tunnelPorts ?? [], request.user);
    } catch (error) {
      this.end(spare, `its build could not be put in place (${(error as Error).message})`);
      return undefined;
    }
    const env = sandboxEnv(request, spare.launch.channel);
    if (spare.exited) return undefined; // its exit cleaned up after it
    spare.claimed = true; // from here its channel and cgroup are its worker's
    if (spare.priority !== undefined && spare.holder.pid) raise(spare.holder.pid, spare.priority); // before go: its threads inherit it
    const keepRuntime = spare.runtimeAhead && runtime?.same === true;
    spare.proc.stdin?.end(`${JSON.stringify({ handler: request.handler, env, runtime: keepRuntime })}\n`);
    this.deps.log(
      endpoint.id,
      `warm spare ${spare.id} (started ${Math.round(Date.now() - spare.startedAt)} ms ago) runs build ${target.build.id}: in place in ${Math.round(performance.now() - t0)} ms (${runtime?.linked ?? 0} runtime .pyc${keepRuntime ? ", the runtime imported ahead" : ""})`,
    );
    return {
      proc: spare.proc,
      launch: { ...spare.launch, env },
      cgroup: spare.cgroup,
      pid: spare.holder.pid,
      discard: () => {
        spare.claimed = false; // its channel and cgroup go with it
        this.kill(spare);
      },
    };
  }

  /** The endpoint's spare waiting for its next worker, if any: its id and its interpreter's host pid (the autoscaler, tests). */
  held(endpointId: string): { id: string; pid?: number; startedAt: number } | undefined {
    const spare = this.spares.get(endpointId);
    return spare && !spare.exited ? { id: spare.id, pid: spare.holder.pid, startedAt: spare.startedAt } : undefined;
  }

  /**
   * A worker of the endpoint is ready: a spare for its next one starts SPARE_START_DELAY_MS later, if
   * the endpoint has spares and none is there. Not at once: spawning bwrap holds the platform's event
   * loop for a few ms (a fork of its process), which the ready worker's first job would wait on.
   */
  refill(endpointId: string): void {
    if (!this.templates.get(endpointId)?.eligible || !this.enabled || this.spares.has(endpointId) || this.starting.has(endpointId)) return;
    if (this.spares.size + this.starting.size >= MAX_SPARES) return;
    const started = this.pause(SPARE_START_DELAY_MS)
      .then(() => {
        const template = this.templates.get(endpointId); // as it is now: the endpoint may have moved or gone meanwhile
        return template?.eligible && this.enabled ? this.start(endpointId, template) : undefined;
      })
      .catch((error: Error) => this.deps.log(endpointId, `warm spare not started: ${error.message}`))
      .finally(() => this.starting.delete(endpointId));
    this.starting.set(endpointId, started);
  }

  /** Resolves after `ms`, or at once when the platform closes (the timer holds nothing open). */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const end = () => {
        clearTimeout(timer);
        this.pauses.delete(end);
        resolve();
      };
      const timer = setTimeout(end, ms).unref();
      this.pauses.add(end);
    });
  }

  /** The endpoint is gone: so are its spare and what its next one would have been made like. */
  drop(endpointId: string): void {
    this.templates.delete(endpointId);
    const spare = this.spares.get(endpointId);
    if (spare) {
      this.spares.delete(endpointId);
      this.end(spare, "its endpoint was deleted");
    }
  }

  private async start(endpointId: string, template: Template): Promise<void> {
    const { images, resources } = this.deps;
    if (!(await images.sandboxed())) return;
    const id = newId("sp");
    const stage = join(this.deps.dataDir, SPARES_DIR, id);
    const req = template.request;
    let launch: WorkerLaunch | undefined;
    let cgroup: WorkerCgroup | undefined;
    const view = await images.view(req.image, req.python);
    this.deps.bytecode.prepare(view.executable);
    const runtimeDir = this.deps.bytecode.tree(view.executable);
    try {
      await makeStage(stage);
      launch = await images.launch({
        ...req,
        buildDir: stage,
        runtimeDir,
        env: startupEnv(req.env),
        command: [view.executable, "-s", "-c", SPARE_BOOTSTRAP, runtimeDir ? SANDBOX_RUNTIME_DIR : ""],
        network: req.network && { ...req.network, workerId: id, tunnelPorts: [] },
      });
      if (!launch.sandboxed || this.closed) throw new Error(this.closed ? "the platform is stopping" : "no sandbox");
      cgroup = resources.open(id, template.limits);
    } catch (error) {
      if (launch?.channel) await closeChannel(launch.channel);
      await rm(stage, { recursive: true, force: true });
      throw error;
    }
    const proc = spawnLaunch(launch, { stdin: true, prefix: cgroup ? joinPrefix(cgroup) : undefined });
    const priority = process.getuid?.() === 0 && proc.pid ? lower(proc.pid) : undefined;
    let pidKnown!: () => void;
    const spare: Spare = {
      id,
      endpointId,
      key: shapeKey(endpointId, req, template.limits),
      stage,
      executable: view.executable,
      runtimeAhead: runtimeDir !== undefined,
      proc,
      launch,
      cgroup,
      holder: {},
      pidKnown: new Promise<void>((resolve) => (pidKnown = resolve)),
      startedAt: Date.now(),
      priority,
      claimed: false,
      exited: false,
    };
    readChildPid(proc, spare.holder, pidKnown);
    proc.once("exit", pidKnown);
    proc.stdin?.on("error", () => undefined); // gone before it read its line: its exit says why
    proc.on("error", () => undefined);
    proc.on("exit", (code, signal) => (spare.cleaned = this.exited(spare, signal ? `signal ${signal}` : `code ${code}`)));
    this.spares.set(endpointId, spare);
    if (this.closed) this.kill(spare); // the platform began to stop meanwhile
  }

  /** Its stage goes; an unclaimed spare's channel and cgroup too (a claimed one's go with its worker). */
  private async exited(spare: Spare, how: string): Promise<void> {
    spare.exited = true;
    if (!spare.claimed) {
      if (this.spares.get(spare.endpointId) === spare) {
        this.spares.delete(spare.endpointId);
        this.deps.log(spare.endpointId, `warm spare ${spare.id} exited (${how})`);
      }
      if (spare.launch.channel) await closeChannel(spare.launch.channel).catch(() => undefined);
      if (spare.cgroup) await this.deps.resources.end(spare.cgroup).catch(() => undefined);
    }
    await rm(spare.stage, { recursive: true, force: true }).catch(() => undefined);
  }

  private end(spare: Spare, why: string): void {
    this.deps.log(spare.endpointId, `warm spare ${spare.id} ends: ${why}`);
    this.kill(spare);
  }

  private kill(spare: Spare): void {
    if (spare.exited) return;
    if (spare.cgroup) void spare.cgroup.killAll();
    spare.proc.kill("SIGKILL");
  }

  /** The platform stops: every unclaimed spare ends (within 3 s) and is cleaned up. */
  async close(): Promise<void> {
    this.closed = true;
    for (const end of [...this.pauses]) end();
    await Promise.all(this.starting.values());
    const all = [...this.spares.values()];
    const exits = all.map((spare) => (spare.exited ? Promise.resolve() : new Promise<void>((resolve) => spare.proc.once("exit", () => resolve()))));
    for (const spare of all) this.kill(spare);
    const late = new Promise<void>((resolve) => setTimeout(resolve, 3000).unref());
    await Promise.race([Promise.all(exits), late]);
    await Promise.all(all.map((spare) => spare.cleaned));
    this.spares.clear();
  }
}
