/**
 * A worker's record, its variables (contracts section 4), the Python process's pid inside bwrap,
 * and signals to it (a local process, or its remote backend's run). The launch itself (unpack, image
 * environment, GPU) is the local backend's (./backends/local.ts), from the plan (./launch-plan.ts).
 */
import type { ChildProcess } from "node:child_process";
import type { EndpointRecord } from "../store/index.ts";
import type { ResolvedOptions } from "../options.ts";
import type { WorkerKeys } from "../worker-keys.ts";
import type { Secrets } from "../secrets.ts";
import { freePort } from "../_free-port.ts";
import { newId, sha256Hex, secretDigest } from "../_ids.ts";
import type { WorkerTarget } from "./target.ts";
import type { WorkerInfo } from "./worker-info.ts";

/** Platform variables a user's env may not override. */
const PASS_THROUGH_ENV = [
  "PATH",
  "HOME",
  "USER",
  "LANG",
  "LC_ALL",
  "LC_CTYPE",
  "TZ",
  "TMPDIR",
  "TEMP",
  "TMP",
  "LD_LIBRARY_PATH",
  "CUDA_VISIBLE_DEVICES",
  "NVIDIA_VISIBLE_DEVICES",
  "CUDA_HOME",
  "HF_HOME",
  "TORCH_HOME",
  "XDG_CACHE_HOME",
  "SSL_CERT_FILE",
];

/** The host's variables a worker keeps (the launcher on a Ray node gives its own node's). */
export function passThroughEnv(from: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const key of PASS_THROUGH_ENV) if (from[key] !== undefined) env[key] = from[key];
  return env;
}

/** A new worker's record, before its process starts. */
export function newWorker(endpoint: EndpointRecord, configKey: string, token: string): WorkerInfo {
  let resolveExit!: () => void;
  const exit = new Promise<void>((resolve) => (resolveExit = resolve));
  const now = Date.now();
  const tokenHash = sha256Hex(token);
  return {
    id: newId("wk"),
    endpointId: endpoint.id,
    type: endpoint.type,
    tokenHash,
    tokenDigest: secretDigest(tokenHash),
    configKey,
    startedAt: now,
    ready: false,
    unhealthy: false,
    stopping: false,
    outdated: false,
    exited: false,
    lastSeen: now,
    openPolls: 0,
    idleSince: now,
    lbFailures: 0,
    probing: false,
    lastLines: [],
    inFlight: 0,
    cancel: [],
    stop: false,
    exit,
    resolveExit,
  };
}

export interface WorkerEnvDeps {
  options: ResolvedOptions;
  workerKeys: WorkerKeys;
  secrets: Secrets;
  apiBase: () => string;
  workerSocket?: () => string | undefined;
}

/**
 * The worker's variables (contracts section 4); its image environment sets PYTHONPATH. An LB worker
 * gets its port. `passThrough`: this host's PATH, HOME, ... (not for a worker on another node).
 */
export async function workerEnv(
  deps: WorkerEnvDeps,
  endpoint: EndpointRecord,
  w: WorkerInfo,
  token: string,
  target: WorkerTarget,
  passThrough = true,
): Promise<NodeJS.ProcessEnv> {
  const base = deps.apiBase();
  const prefix = `${base}/v2/_worker/${w.id}`;
  const env: NodeJS.ProcessEnv = {};
  if (passThrough) Object.assign(env, passThroughEnv(process.env));
  Object.assign(env, deps.secrets.resolve(target.env)); // secret values exist only in the worker's env
  Object.assign(env, {
    PYTHONUNBUFFERED: "1",
    SVC_WORKER_ID: w.id,
    SVC_WORKER_TOKEN: token,
    SVC_ENDPOINT_ID: endpoint.id,
    SVC_ENDPOINT_NAME: target.manifestName,
    SVC_BUILD_ID: target.build.id,
    SVC_API_BASE: base,
    SVC_JOB_TAKE_URL: `${prefix}/job-take`,
    SVC_JOB_DONE_URL: `${prefix}/job-done/$ID`,
    SVC_JOBS_DONE_URL: `${prefix}/jobs-done`, // results of several jobs in one request (docs/platform.md, "Hot path")
    SVC_JOB_STREAM_URL: `${prefix}/job-stream/$ID`,
    SVC_PING_URL: `${prefix}/ping`,
    SVC_SIGNALS_URL: `${prefix}/signals`,
    SVC_ERROR_URL: `${prefix}/error`,
    SVC_PING_INTERVAL: String(deps.options.pingIntervalS),
    PLATFORM_API_URL: base,
    PLATFORM_API_KEY: deps.workerKeys.keyFor(endpoint),
  });
  if (target.runtime === "runpod") {
    Object.assign(env, stockSdkEnv(prefix, w, endpoint, token, deps.options.pingIntervalS));
    // its client (runpod.Endpoint) calls the app's other endpoints with the worker's scoped key, as svc's do
    Object.assign(env, { RUNPOD_API_KEY: env.PLATFORM_API_KEY, RUNPOD_ENDPOINT_BASE_URL: `${base}/v2` });
  }
  const socket = deps.workerSocket?.();
  if (socket) env.SVC_PLATFORM_SOCKET = socket; // the runtime sends its SVC_API_BASE requests there (cheaper than TCP)
  if (endpoint.type === "LB") {
    w.lbPort = await freePort();
    env.SVC_LB_PORT = String(w.lbPort);
  }
  return env;
}

/**
 * The variables the hosted platform's worker SDK reads (its runpod/serverless/modules/), pointing at
 * this worker's stock routes (platform/api/stock-worker-routes.ts). The SDK appends `&job_in_progress=`
 * and `&isStream=` to its URLs, so each carries a query already; it derives the batch take and the
 * stop channel from `/job-take/`. Its API key is the worker's own token: valid on this worker's routes
 * only, never the user's key. Its automatic system checks (memory, disk, the internet) are off: the
 * worker's flavour sets its resources, and `network=False` workers have no internet on purpose.
 */
export function stockSdkEnv(prefix: string, w: WorkerInfo, endpoint: EndpointRecord, token: string, pingIntervalS: number): NodeJS.ProcessEnv {
  const stock = `${prefix}/stock`;
  return {
    RUNPOD_POD_ID: w.id,
    RUNPOD_POD_HOSTNAME: w.id,
    RUNPOD_ENDPOINT_ID: endpoint.id,
    RUNPOD_AI_API_KEY: token,
    RUNPOD_WEBHOOK_GET_JOB: `${stock}/job-take/$ID?sdk=1`,
    RUNPOD_WEBHOOK_POST_OUTPUT: `${stock}/job-done/$ID?sdk=1`,
    RUNPOD_WEBHOOK_POST_STREAM: `${stock}/job-stream/$ID?sdk=1`,
    RUNPOD_WEBHOOK_PING: `${stock}/ping`,
    RUNPOD_PING_INTERVAL: String(pingIntervalS * 1000),
    RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true",
    RUNPOD_SKIP_GPU_CHECK: "true",
  };
}

/** bwrap writes `{"child-pid": N}` on fd 3: the Python process, the one to signal (`known` hears it once). */
export function readChildPid(proc: ChildProcess, w: { pid?: number }, known?: () => void): void {
  const info = proc.stdio[3] as NodeJS.ReadableStream | null;
  if (!info) return;
  let text = "";
  info.setEncoding("utf8");
  info.on("data", (chunk: string) => {
    text += chunk;
    const pid = /"child-pid":\s*(\d+)/.exec(text)?.[1];
    if (pid && !w.pid) {
      w.pid = Number(pid);
      known?.();
    }
  });
  info.on("error", () => undefined);
}

/** SIGTERM goes to the Python process (bwrap does not forward signals); SIGKILL to it and to bwrap. */
export function signalWorker(w: WorkerInfo, signal: NodeJS.Signals): void {
  if (w.remote) {
    if (!w.exited) w.remote.signal(signal); // a worker on another node: its backend stops it
    return;
  }
  const proc = w.proc;
  if (w.exited || !proc || proc.exitCode !== null) return;
  const inner = w.pid !== undefined && w.pid !== proc.pid;
  if (inner) {
    try {
      process.kill(w.pid!, signal);
    } catch {
      /* already gone */
    }
  }
  if (!inner || signal === "SIGKILL") proc.kill(signal);
}

/**
 * Graceful stop of the process: a ready QB worker got its `stop` signal and has `stopGraceMs` to
 * finish, then SIGTERM; anything else gets SIGTERM now. SIGKILL follows after `killGraceMs`.
 */
export function stopProcess(w: WorkerInfo, graceful: boolean, { stopGraceMs, killGraceMs }: { stopGraceMs: number; killGraceMs: number }): void {
  const term = () => {
    signalWorker(w, "SIGTERM");
    setTimeout(() => signalWorker(w, "SIGKILL"), killGraceMs).unref();
  };
  if (graceful) setTimeout(term, stopGraceMs).unref();
  else term();
}
