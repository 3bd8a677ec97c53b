/** Options of one embedded platform, with the hosted platform's numbers as defaults. */
import type { GpuMachine } from "./gpu-machine.ts";
import { capsFromEnv, DEFAULT_CONNECTION_LIMITS, DEFAULT_LOG_RATE, type ConnectionLimits, type LogRate, type WorkerLimitCaps } from "./limit-options.ts";
import { workersFromEnv, type WorkersOption } from "./workers-option.ts";
import { errors } from "../core/errors.ts";

export type { WorkersOption };

/** Where workers run: processes on this machine (default), or Ray jobs on a cluster (docs/platform.md, "Workers on a Ray cluster"). */

export interface RateLimit {
  /** Requests per window. */
  requests: number;
  /** Concurrent requests (0: no limit). */
  concurrent: number;
}

export interface RateLimits {
  windowMs: number;
  runsync: RateLimit;
  run: RateLimit;
  status: RateLimit;
  cancel: RateLimit;
  purge: RateLimit;
}

export interface PlatformOptions {
  /** Where the database, artifacts, unpacked builds and files live. */
  dataDir: string;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Use this API key instead of the one in `<dataDir>/api-key` (created on first start). */
  apiKey?: string;
  /** Image name → Python interpreter; the default maps GPU/torch images to a torch-capable Python. */
  pythonForImage?: (image: string, endpointName: string) => string;
  /** The machine's GPUs and driver libraries (default: nvidia-smi and ldconfig; a fake in tests). docs/platform.md, "GPUs". */
  gpuMachine?: GpuMachine;
  /** How long job-take and signals hold a request open before 204 (contracts: 20 s). */
  longPollMs?: number;
  /** SVC_PING_INTERVAL given to workers, in seconds; 3 intervals of silence make a worker unhealthy. */
  pingIntervalS?: number;
  /** Period of the timeout/expiry/retention sweeps. */
  sweepIntervalMs?: number;
  /** Period of the autoscaler. */
  scaleIntervalMs?: number;
  /** Period of the console's time series (its charts' points: console/timeseries.ts). */
  consoleSampleMs?: number;
  /** Pause between webhook attempts (hosted: 10 s), and how many extra attempts (hosted: 2). */
  webhookRetryDelayMs?: number;
  webhookRetries?: number;
  /** Host names, addresses and CIDRs webhooks may go to although they are the host's own (default SVC_WEBHOOK_ALLOW; docs/platform.md, "Webhooks"). */
  webhookAllow?: string;
  /** How long a finished job's result is kept. */
  runsyncRetentionMs?: number;
  runRetentionMs?: number;
  /** Output files (contracts section 6). */
  fileRetentionMs?: number;
  /** How long a load-balanced request waits for a ready worker before 503. */
  lbReadyWaitMs?: number;
  /** Stopping a worker: `stop` signal, then SIGTERM after stopGraceMs, then SIGKILL after killGraceMs. */
  stopGraceMs?: number;
  killGraceMs?: number;
  /** How long /stream/<id> waits for a new chunk before answering an empty list. */
  streamWaitMs?: number;
  /** Per-endpoint rate limits (false: none; default: the hosted ones unless SVC_PLATFORM_RATE_LIMITS=off). */
  rateLimits?: Partial<RateLimits> | false;
  /** Payload limits in bytes. */
  maxRunBytes?: number;
  maxRunsyncBytes?: number;
  /** Worker log lines kept per endpoint. */
  logLinesPerEndpoint?: number;
  /** Characters of worker log lines kept per endpoint (whichever of the two caps comes first). */
  logCharsPerEndpoint?: number;
  /** A worker's log rate: characters per second and burst; lines over it are dropped and marked (docs/platform.md, "Worker logs"). */
  logRate?: LogRate;
  /** Where the platform's own messages go (default: stderr). */
  log?: (line: string) => void;
  /** "strict": refuse to start workers without the bwrap sandbox (default: SVC_ISOLATION, else "auto"). docs/platform.md, "Threat model". */
  isolation?: "auto" | "strict";
  /**
   * Caps over every worker's flavour limits: memory in MB (at most the flavour's) and processes
   * (default 1024); default SVC_WORKER_MEMORY_MB, SVC_WORKER_PIDS. docs/platform.md, "Resources".
   */
  workerLimits?: WorkerLimitCaps;
  /** Connection caps of the API's servers (docs/platform.md, "Limits"): total, per client (key), per worker, first-request wait. */
  connectionLimits?: Partial<ConnectionLimits>;
  /** false: no cgroups for workers (default: SVC_WORKER_CGROUPS=off turns them off); strict isolation then refuses workers. */
  cgroups?: boolean;
  /** Where workers run (default: SVC_WORKERS and SVC_RAY_*, else local processes). */
  workers?: WorkersOption;
  /** Deploys kept per app and environment, with their builds, for `svc history` and `svc rollback` (default: SVC_HISTORY_RETENTION, else 10). */
  historyRetention?: number;
  /** Audit log entries kept, newest (default: SVC_AUDIT_RETENTION, else 10000). */
  auditRetention?: number;
  /**
   * The host uids a platform run as root gives its apps' workers, one per app, as `first-last`
   * (default: SVC_WORKER_UIDS, else 200000-200999). docs/platform.md, "Threat model".
   */
  workerUids?: string;
}

export const HOSTED_RATE_LIMITS: RateLimits = {
  windowMs: 10_000,
  runsync: { requests: 2000, concurrent: 400 },
  run: { requests: 1000, concurrent: 200 },
  status: { requests: 2000, concurrent: 0 },
  cancel: { requests: 100, concurrent: 0 },
  purge: { requests: 2, concurrent: 0 },
};

/** `SVC_PLATFORM_RATE_LIMITS=off` (what `svc platform start --no-rate-limits` sets) turns the limits off. */
export const rateLimitsOff = (env: NodeJS.ProcessEnv = process.env): boolean => /^(off|false|0|no)$/i.test(env.SVC_PLATFORM_RATE_LIMITS?.trim() ?? "");

/** `SVC_ISOLATION=strict` (what `svc platform start --isolation strict` sets): no worker without the sandbox. */
/** A positive whole number from the environment, else `fallback`. */
function countFromEnv(name: string, fallback: number): number {
  const text = process.env[name]?.trim();
  if (!text) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw errors.CLI_USAGE(`${name} takes a whole number of at least 1, not "${text}".`, "platform");
  return n;
}

const isolationFromEnv = (env: NodeJS.ProcessEnv = process.env): "auto" | "strict" =>
  env.SVC_ISOLATION?.trim().toLowerCase() === "strict" ? "strict" : "auto";

export type ResolvedOptions = Required<Omit<PlatformOptions, "apiKey" | "pythonForImage" | "rateLimits" | "gpuMachine" | "connectionLimits">> & {
  connectionLimits: ConnectionLimits;
  apiKey?: string;
  pythonForImage?: PlatformOptions["pythonForImage"];
  gpuMachine?: GpuMachine;
  rateLimits: RateLimits | false;
};

export function resolveOptions(options: PlatformOptions): ResolvedOptions {
  return {
    dataDir: options.dataDir,
    host: options.host ?? "127.0.0.1",
    port: options.port ?? 8787,
    apiKey: options.apiKey,
    pythonForImage: options.pythonForImage,
    gpuMachine: options.gpuMachine,
    longPollMs: options.longPollMs ?? 20_000,
    pingIntervalS: options.pingIntervalS ?? 10,
    sweepIntervalMs: options.sweepIntervalMs ?? 1000,
    scaleIntervalMs: options.scaleIntervalMs ?? 250,
    consoleSampleMs: options.consoleSampleMs ?? 10_000,
    webhookRetryDelayMs: options.webhookRetryDelayMs ?? 10_000,
    webhookRetries: options.webhookRetries ?? 2,
    webhookAllow: options.webhookAllow ?? process.env.SVC_WEBHOOK_ALLOW ?? "",
    runsyncRetentionMs: options.runsyncRetentionMs ?? 60_000,
    runRetentionMs: options.runRetentionMs ?? 30 * 60_000,
    fileRetentionMs: options.fileRetentionMs ?? 7 * 24 * 3600_000,
    lbReadyWaitMs: options.lbReadyWaitMs ?? 60_000,
    stopGraceMs: options.stopGraceMs ?? 10_000,
    killGraceMs: options.killGraceMs ?? 5000,
    streamWaitMs: options.streamWaitMs ?? 1000,
    rateLimits:
      options.rateLimits === false || (options.rateLimits === undefined && rateLimitsOff()) ? false : { ...HOSTED_RATE_LIMITS, ...options.rateLimits },
    maxRunBytes: options.maxRunBytes ?? 10_000_000,
    maxRunsyncBytes: options.maxRunsyncBytes ?? 20_000_000,
    logLinesPerEndpoint: options.logLinesPerEndpoint ?? 5000,
    logCharsPerEndpoint: options.logCharsPerEndpoint ?? 16 * 1024 * 1024,
    logRate: options.logRate ?? DEFAULT_LOG_RATE,
    log: options.log ?? ((line) => process.stderr.write(`[platform] ${line}\n`)),
    isolation: options.isolation ?? isolationFromEnv(),
    workerLimits: options.workerLimits ?? capsFromEnv(),
    connectionLimits: { ...DEFAULT_CONNECTION_LIMITS, ...options.connectionLimits },
    cgroups: options.cgroups ?? !/^(off|false|0|no)$/i.test(process.env.SVC_WORKER_CGROUPS?.trim() ?? ""),
    workers: options.workers ?? workersFromEnv(),
    historyRetention: options.historyRetention ?? countFromEnv("SVC_HISTORY_RETENTION", 10),
    auditRetention: options.auditRetention ?? countFromEnv("SVC_AUDIT_RETENTION", 10_000),
    workerUids: options.workerUids ?? process.env.SVC_WORKER_UIDS ?? "",
  };
}
