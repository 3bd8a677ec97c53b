/**
 * The worker launcher (`svc worker launch`), what a Ray job runs on the node Ray chose: it redeems
 * the job's one-time launch ticket (SVC_LAUNCH_TICKET) at the platform (SVC_API_BASE) for the
 * worker's launch description and token (the job's variables, which Ray's Jobs API shows, hold no
 * credential), fetches the build's artifact over HTTP with that token (checked against its sha256,
 * kept per node), unpacks it with the platform's own checks (../unpack.ts), and starts the worker
 * in the same image environment and bwrap sandbox a local worker gets (../image-env.ts), as its
 * app's host user where the launcher runs as root (the launch names it), with the GPUs Ray gave the
 * job (its CUDA_VISIBLE_DEVICES). The worker's output goes to this process's stdout (Ray's job log)
 * and to the platform (`svc logs`). SIGTERM (Ray stopping the job) goes on to the worker; the
 * launcher exits with the worker's exit code. docs/platform.md, "Workers on a Ray cluster".
 */
import { createHash } from "node:crypto";
import { createWriteStream, existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { constants, tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { request } from "undici";
import { errors } from "../../../core/errors.ts";
import { BuildUnpacker } from "../../artifacts/unpack.ts";
import { ImageEnvironments } from "../image-env.ts";
import { defaultPythonForImage } from "../interpreter.ts";
import { deviceNodes, queryDriverLibraryDirs, queryGpus } from "../gpus.ts";
import type { GpuGrant } from "../gpu-assign.ts";
import { captureLines } from "../worker-logs.ts";
import { passThroughEnv } from "../worker-process.ts";
import type { RemoteLaunch } from "./backend.ts";
import { giveVolumeTo } from "../../volumes/mount.ts";
import { closeChannel } from "../worker-channel.ts";
import { relayToPlatform } from "./node-channel.ts";
import { spawnLaunch } from "./spawn.ts";
import { removeOrphanNetns } from "../sandbox-egress.ts";

/** Lines go to the platform at most this often, and in batches of at most this many. */
const SHIP_EVERY_MS = 200;
const SHIP_MAX_LINES = 500;

interface LaunchEnv {
  workerId: string;
  ticket: string;
  apiBase: string;
  nodeDir: string;
}

function launchEnv(env: NodeJS.ProcessEnv): LaunchEnv {
  const { SVC_WORKER_ID: workerId, SVC_LAUNCH_TICKET: ticket, SVC_API_BASE: apiBase } = env;
  if (!workerId || !ticket || !apiBase) {
    throw errors.CLI_USAGE(
      "svc worker launch runs one worker of a platform on this node: it needs SVC_WORKER_ID, SVC_LAUNCH_TICKET and SVC_API_BASE, which the platform's Ray backend sets on the job.",
      "worker",
    );
  }
  return { workerId, ticket, apiBase, nodeDir: env.SVC_NODE_DIR || join(tmpdir(), `svc-node-${process.getuid?.() ?? 0}`) };
}

/** Sends the worker's lines to the platform in batches; a failed batch is dropped (Ray's job log has them). */
class LineShipper {
  private lines: string[] = [];
  private timer?: NodeJS.Timeout;
  private sending: Promise<void> = Promise.resolve();

  constructor(
    private readonly url: string,
    private readonly token: string,
  ) {}

  push(line: string): void {
    this.lines.push(line);
    if (this.lines.length >= SHIP_MAX_LINES) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), SHIP_EVERY_MS);
  }

  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.lines.splice(0);
    if (batch.length > 0) {
      this.sending = this.sending.then(() =>
        request(this.url, {
          method: "POST",
          headers: { authorization: `Bearer ${this.token}`, "content-type": "application/json" },
          body: JSON.stringify({ lines: batch }),
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        })
          .then((res) => res.body.dump())
          .catch(() => undefined),
      );
    }
    return this.sending;
  }
}

/** The launch description, for the ticket (once); it holds the worker's token. */
async function getLaunch(le: LaunchEnv): Promise<RemoteLaunch> {
  const res = await request(`${le.apiBase}/v2/_worker/${le.workerId}/launch`, {
    headers: { authorization: `Bearer ${le.ticket}` },
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const body = (await res.body.json()) as RemoteLaunch & { error?: string };
  if (res.statusCode !== 200) throw new Error(`the platform refused worker ${le.workerId}'s launch (${res.statusCode}): ${body.error ?? ""}`);
  return body;
}

/** The build's artifact on this node: fetched once per sha256, checked against it, renamed into place. */
async function fetchArtifact(le: LaunchEnv, launch: RemoteLaunch, token: string): Promise<string> {
  const dir = join(le.nodeDir, "artifacts");
  const file = join(dir, `${launch.sha256}.tar.gz`);
  if (existsSync(file)) return file;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const part = `${file}.${process.pid}.part`;
  const res = await request(`${le.apiBase}/v2/_worker/${le.workerId}/artifact`, {
    headers: { authorization: `Bearer ${token}` },
    headersTimeout: 30_000,
    bodyTimeout: 120_000,
  });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`the platform did not send build ${launch.buildId}'s artifact (${res.statusCode})`);
  }
  const hash = createHash("sha256");
  const body = Readable.from(res.body);
  body.on("data", (chunk: Buffer) => hash.update(chunk));
  await pipeline(body, createWriteStream(part, { mode: 0o600 }));
  const got = hash.digest("hex");
  if (got !== launch.sha256) {
    await rm(part, { force: true });
    throw new Error(`build ${launch.buildId}'s artifact arrived with sha256 ${got}, not ${launch.sha256}`);
  }
  await rename(part, file);
  return file;
}

/** The GPUs Ray gave this job (its CUDA_VISIBLE_DEVICES), as the sandbox binds them; none where nvidia-smi lists none. */
async function rayGpus(env: NodeJS.ProcessEnv): Promise<GpuGrant | undefined> {
  if (!env.CUDA_VISIBLE_DEVICES) return undefined;
  const gpus = await queryGpus(env);
  if (gpus.length === 0) return undefined;
  return { gpus, devices: deviceNodes(gpus), libraryDirs: await queryDriverLibraryDirs(), env: { CUDA_VISIBLE_DEVICES: env.CUDA_VISIBLE_DEVICES } };
}

/** Runs the worker; resolves to its exit code (128 + n for a signal). */
export async function launchWorker(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const le = launchEnv(env);
  const launch = await getLaunch(le);
  const token = launch.env.SVC_WORKER_TOKEN ?? "";
  const shipper = new LineShipper(`${le.apiBase}/v2/_worker/${le.workerId}/logs`, token);
  const say = (line: string) => {
    process.stdout.write(`${line}\n`);
    shipper.push(`[launcher] ${line}`);
  };
  const artifact = await fetchArtifact(le, launch, token);
  const buildDir = await new BuildUnpacker(join(le.nodeDir, "builds")).ensure(launch.buildId, artifact);
  const gpu = await rayGpus(env);
  const python = await defaultPythonForImage(launch.image, async () => gpu !== undefined, env);
  const images = new ImageEnvironments(le.nodeDir, say, launch.isolation);
  const workerVars: NodeJS.ProcessEnv = { ...passThroughEnv(env), ...launch.env };
  if (env.CUDA_VISIBLE_DEVICES !== undefined) workerVars.CUDA_VISIBLE_DEVICES = env.CUDA_VISIBLE_DEVICES; // as Ray set it
  const volumeDir = launch.volumeDir && existsSync(launch.volumeDir) ? launch.volumeDir : undefined;
  if (launch.volumeDir && !volumeDir)
    say(`the endpoint's volume folder ${launch.volumeDir} is not on this node: mount the platform's volumes folder there (--ray-volumes)`);
  const user = process.getuid?.() === 0 ? launch.user : undefined; // a launcher not run as root runs it as its own user
  if (user && volumeDir) await giveVolumeTo(volumeDir, user);
  // its own network namespace, its channel a relay of this launcher's to the platform (./node-channel.ts);
  // the namespaces launchers killed by Ray (SIGKILL) left go first
  await removeOrphanNetns();
  const relay = await relayToPlatform(le.nodeDir, le.workerId, launch.env.SVC_API_BASE ?? le.apiBase);
  const network = relay && {
    platformSocket: relay.path,
    workerId: le.workerId,
    apiBase: launch.env.SVC_API_BASE ?? le.apiBase,
    lb: false,
    egress: launch.network,
  };
  const spec = await images.launch({ image: launch.image, python, buildDir, handler: launch.handler, env: workerVars, gpu, volumeDir, user, network });
  say(
    `worker ${le.workerId} starts on ${process.env.HOSTNAME ?? "this node"}: build ${launch.buildId}, ${spec.sandboxed ? "in the bwrap sandbox" : "without a sandbox"}${user ? `, as uid ${user.uid}` : ""}${spec.channel ? ", in a network namespace of its own" : ", in the node's network"}${env.CUDA_VISIBLE_DEVICES ? `, CUDA_VISIBLE_DEVICES=${env.CUDA_VISIBLE_DEVICES}` : ""}`,
  );
  const proc = spawnLaunch(spec);
  let innerPid: number | undefined;
  const info = proc.stdio[3] as NodeJS.ReadableStream | null;
  info?.setEncoding("utf8");
  info?.on("data", (chunk: string) => (innerPid ??= Number(/"child-pid":\s*(\d+)/.exec(chunk)?.[1]) || undefined));
  info?.on("error", () => undefined);
  // Ray stops a job with SIGTERM to its process group: the worker (inside bwrap: its inner pid) gets it.
  const forward = (signal: NodeJS.Signals) => {
    try {
      if (innerPid) process.kill(innerPid, signal);
      else proc.kill(signal);
    } catch {
      /* already gone */
    }
  };
  process.on("SIGTERM", () => forward("SIGTERM"));
  process.on("SIGINT", () => forward("SIGTERM"));
  captureLines([proc.stdout, proc.stderr], (line) => {
    process.stdout.write(`${line}\n`);
    shipper.push(line);
  });
  const code = await new Promise<number>((resolve) => {
    proc.on("error", (error) => {
      say(`could not start the worker: ${error.message}`);
      resolve(127);
    });
    proc.on("close", (c, signal) => resolve(c ?? 128 + (signal ? constants.signals[signal] : 0))); // after its output's last line
  });
  if (spec.channel) await closeChannel(spec.channel);
  await relay?.close();
  await images.close();
  await shipper.flush();
  return code;
}
