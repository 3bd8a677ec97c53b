/**
 * The local backend: a worker as a process on this machine. From its launch plan (../launch-plan.ts)
 * it unpacks the build, picks the image's interpreter, waits for the worker's GPUs (../gpu-assign.ts),
 * gives the volume to the app's host user, makes the image environment and bwrap sandbox
 * (../image-env.ts) with its network channel (../worker-channel.ts), opens its cgroup with the
 * flavour's limits (../worker-resources.ts), spawns it (./spawn.ts), captures its output within its
 * log rate (../worker-logs.ts) and reports its exit. `svc shell` (../shell.ts) is spawned by the same
 * `spawn`, from the same plan, so a shell gets what a worker gets (sandbox, limits, network, uid).
 */
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { EndpointRecord } from "../../store/index.ts";
import type { ResolvedOptions } from "../../options.ts";
import { BackgroundWork } from "../../_background-work.ts";
import { BuildUnpacker } from "../../artifacts/unpack.ts";
import { giveVolumeTo } from "../../volumes/mount.ts";
import { ImageEnvironments, type ShellLaunch, type WorkerLaunch } from "../image-env.ts";
import { defaultPythonForImage } from "../interpreter.ts";
import type { WorkerGpus } from "../gpu-assign.ts";
import type { LaunchPlan, WorkerReach } from "../launch-plan.ts";
import { closeChannel, loopbackPorts } from "../worker-channel.ts";
import type { WorkerInfo } from "../worker-info.ts";
import { captureWorkerOutput } from "../worker-logs.ts";
import { readChildPid } from "../worker-process.ts";
import { joinPrefix, type LimitsView, type WorkerResources } from "../worker-resources.ts";
import type { BackendHooks, WorkerBackend } from "./backend.ts";
import { spawnLaunch } from "./spawn.ts";
import { RuntimeBytecode } from "./runtime-bytecode.ts";
import { WarmSpares } from "./warm-spares.ts";

export interface LocalWorkersDeps {
  options: ResolvedOptions;
  apiBase: () => string;
  /** The path of the Unix socket bound into sandboxed workers (../worker-channel.ts), if any. */
  channelSocket?: () => string | undefined;
  /** The machine's GPUs and who holds them (shared with the supervisor: /health, throttled). */
  gpus: WorkerGpus;
  /** The machine's cgroups and each worker's limits (shared with the supervisor: /health). */
  resources: WorkerResources;
  /** A `[platform]` line in the worker's logs. */
  log(w: WorkerInfo, line: string): void;
  /** A `[platform]` line in the endpoint's logs (its warm spares'). */
  endpointLog(endpointId: string, line: string): void;
}

export class LocalWorkers implements WorkerBackend {
  readonly name = "local" as const;
  private readonly unpacker: BuildUnpacker;
  private readonly images: ImageEnvironments;
  /** Sandboxes started ahead for the dev server's endpoints' next workers (./warm-spares.ts). */
  readonly spares: WarmSpares;
  /** The svc runtime compiled once per interpreter, its .pyc linked into each build (./runtime-bytecode.ts). */
  private readonly bytecode: RuntimeBytecode;
  /** `interpreter \0 build folder` whose runtime .pyc are in place. */
  private readonly linked = new Set<string>();
  /** Builds being unpacked ahead (`prepare`), exited workers' channels and cgroups being closed: close() waits for them. */
  private readonly background = new BackgroundWork();
  /** Whether workers run in the sandbox (known once one started): its /tmp is sized. */
  private sandboxed?: boolean;
  private closed = false;

  constructor(private readonly deps: LocalWorkersDeps) {
    this.unpacker = new BuildUnpacker(join(deps.options.dataDir, "builds"));
    this.images = new ImageEnvironments(deps.options.dataDir, deps.options.log, deps.options.isolation);
    this.bytecode = new RuntimeBytecode(deps.options.dataDir);
    this.spares = new WarmSpares({
      images: this.images,
      bytecode: this.bytecode,
      resources: deps.resources,
      dataDir: deps.options.dataDir,
      log: deps.endpointLog,
    });
  }

  places(): boolean {
    return true;
  }

  reach(): WorkerReach {
    return { apiBase: this.deps.apiBase(), here: true, ticket: false };
  }

  /** A worker of the endpoint is ready: its next one's warm spare may start. */
  ready(w: WorkerInfo): void {
    this.spares.refill(w.endpointId);
  }

  /** The endpoint is deleted: its warm spare goes. */
  forget(endpointId: string): void {
    this.spares.drop(endpointId);
  }

  /** Kills the processes a platform that was killed left (their pids from its store). */
  killOrphans(left: Iterable<{ pid: number | null }>): void {
    for (const { pid } of left) {
      if (!pid || pid === process.pid) continue;
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        /* already gone */
      }
    }
  }

  /** The limits a worker of the endpoint gets here, and which hold. */
  limitsOf(endpoint: EndpointRecord): LimitsView {
    const { resources, gpus } = this.deps;
    return resources.view(resources.limitsOf(endpoint, endpoint.gpuIds ? gpus.machineCount() : 0), this.sandboxed);
  }

  async start(plan: LaunchPlan, w: WorkerInfo, hooks: BackendHooks): Promise<void> {
    const { proc, launch } = await this.spawn(plan, w, hooks.gone);
    hooks.started(proc.pid ?? null, w.spawnedAt!);
    // its output to its logs, within its log rate, the last few lines kept (../worker-logs.ts)
    captureWorkerOutput(proc, w, this.deps.options.logRate, { line: hooks.output, note: hooks.log });
    proc.on("error", (error) => {
      hooks.log(`worker ${w.id} could not start ${launch.command}: ${error.message}`);
      if (proc.pid === undefined) hooks.failed(error.message); // spawn failed (no such program): no exit event follows
    });
    proc.on("exit", (code, signal) => hooks.exited(signal ? `signal ${signal}` : `code ${code}`, (w.cgroup?.oomKills() ?? 0) > 0));
  }

  /**
   * A build just uploaded is unpacked ahead of its first worker, in the background: that worker's
   * spawn waits on the same unpack (or finds it done), so a deploy's or a dev reload's first worker
   * does not start it only once the endpoint has moved. A failure is left for that spawn to meet.
   * It starts once the upload's answer is on its way: a small build unpacks in one turn of the event
   * loop (../../artifacts/unpack.ts), which the client then spends on its next step instead of waiting.
   */
  prepare(build: { id: string; appId: string }, artifactPath: string): void {
    if (this.closed) return;
    const answered = new Promise<void>((resolve) => setImmediate(resolve));
    this.background.add(answered.then(() => (this.closed ? undefined : this.unpacker.ensure(build.id, artifactPath, build.appId))));
  }

  /**
   * The worker's process spawned from its plan — its build unpacked, its image environment, GPUs,
   * volume, network channel and cgroup — a worker's (start), or `svc shell`'s (../shell.ts) with
   * `shell` turning the launch into the shell's command. What it holds is freed by `release`.
   */
  async spawn(plan: LaunchPlan, w: WorkerInfo, gone: () => boolean, shell?: ShellLaunch): Promise<{ proc: ChildProcess; launch: WorkerLaunch }> {
    const { options, gpus, resources } = this.deps;
    const { endpoint, target, user, volumeDir } = plan;
    const dir = await this.unpacker.ensure(target.build.id, target.artifactPath, target.build.appId);
    const python = options.pythonForImage
      ? options.pythonForImage(target.image, endpoint.name)
      : await defaultPythonForImage(target.image, () => gpus.present());
    const stopped = () => gone() || this.closed;
    const gpu = await gpus.assign({ id: w.id, gone: stopped }, endpoint, target.env, (line) => {
      options.log(line);
      this.deps.log(w, line);
    });
    if (volumeDir && user) await giveVolumeTo(volumeDir, user);
    const lb = w.type === "LB" && !shell; // a shell listens for nothing
    const apiBase = this.deps.apiBase();
    const network = {
      platformSocket: this.deps.channelSocket?.(),
      workerId: w.id,
      apiBase,
      lb,
      tunnelPorts: loopbackPorts(target.build.manifest.urls, apiBase),
      egress: target.network,
    };
    const limits = resources.limitsOf(endpoint, gpu ? gpus.machineCount() : 0);
    const request = {
      image: target.image,
      python,
      buildDir: dir,
      handler: target.handler,
      env: plan.env,
      gpu,
      volumeDir,
      network,
      tmpBytes: limits.tmpBytes,
      user,
    };
    const warm = shell ? undefined : await this.spares.claim(endpoint, target, request, limits);
    const workerLaunch = warm?.launch ?? (await this.images.launch(shell ? { ...request, command: shell.command } : request));
    if (!warm) await this.linkBytecode(workerLaunch.interpreter, dir);
    const launch = shell ? shell.adjust(workerLaunch) : workerLaunch;
    if (stopped()) {
      if (warm) warm.discard();
      else if (launch.channel) await closeChannel(launch.channel); // its exit may have come and gone meanwhile
      throw new Error("stopped before it started");
    }
    w.channel = launch.channel;
    if (lb) w.lbSocket = launch.channel?.lbSocket;
    w.spawnedAt = Date.now(); // the cold start counts making the cgroup
    w.limits = resources.view(limits, (this.sandboxed = launch.sandboxed));
    const cgroup = (w.cgroup = warm ? warm.cgroup : resources.open(w.id, limits));
    // In the sandbox a shell (sh) joins the cgroup and execs bwrap; without it, the interpreter joins before it can fork.
    const proc = warm?.proc ?? spawnLaunch(launch, { stdin: shell !== undefined, prefix: cgroup && launch.sandboxed ? joinPrefix(cgroup) : undefined });
    w.proc = proc;
    if (warm) w.pid = warm.pid;
    else if (launch.sandboxed) readChildPid(proc, w);
    else {
      w.pid = proc.pid;
      if (cgroup && proc.pid) cgroup.join(proc.pid);
    }
    return { proc, launch };
  }

  /**
   * The runtime's .pyc into the unpacked build, once per build and interpreter (a build whose svc/ is
   * all the app's own gets none, and is not looked at again): the interpreter's compile starts with
   * its first worker, in the background, so the workers after it get them.
   */
  private async linkBytecode(interpreter: string, buildDir: string): Promise<void> {
    const key = `${interpreter}\0${buildDir}`;
    if (this.linked.has(key)) return;
    this.bytecode.prepare(interpreter);
    const linked = await this.bytecode.link(interpreter, buildDir).catch(() => undefined); // none: the worker compiles them, as before
    if (linked !== undefined) this.linked.add(key);
  }

  /** The worker (or shell) exited: its GPUs go to the waiting, its channel and cgroup (with what it left in it) end. */
  release(w: WorkerInfo): void {
    this.deps.gpus.release(w.id);
    this.background.add(Promise.all([w.channel && closeChannel(w.channel), w.cgroup && this.deps.resources.end(w.cgroup)]));
  }

  /** The platform stops: the channels' namespaces and slirp4netns go with it, the cgroups too. */
  async close(): Promise<void> {
    this.closed = true;
    await this.spares.close();
    await this.bytecode.close(); // it writes into the state folder
    await this.background.settled(); // builds unpacked ahead (they write there too), exited workers' channels and cgroups
    await this.images.close();
    this.deps.resources.close();
  }
}
