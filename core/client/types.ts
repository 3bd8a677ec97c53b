/** Shapes the platform answers (platform/graphql/schema.graphql, reference/platform-api.md section 1). */
import type { EndpointType } from "../endpoint-types.ts";
import type { Manifest } from "../manifest.ts";

export interface EnvVar {
  key: string;
  value: string;
}

/** An endpoint's settings: what the platform stores and what its API answers (platform/store keeps these too). */
export interface EndpointSettings {
  id: string;
  name: string;
  type: EndpointType;
  /** Comma-separated GPU tiers, priority order. */
  gpuIds: string | null;
  gpuCount: number | null;
  instanceIds: string[] | null;
  idleTimeout: number;
  scalerType: string;
  scalerValue: number;
  workersMin: number;
  workersMax: number;
  executionTimeoutMs: number;
  templateId: string | null;
  imageName: string | null;
  env: EnvVar[];
  environmentId: string | null;
  buildId: string | null;
}

export interface PlatformEndpoint extends EndpointSettings {
  /** Queue: `{base}/v2/<id>`; load-balanced: `{base}/lb/<id>` (embedded) or `https://<id>.<host>`. */
  url: string;
  /** The attached network volume's id ("" or null: none). */
  networkVolumeId?: string | null;
  createdAt: string;
}

export interface PlatformEnvironment {
  id: string;
  name: string;
  appId: string;
  activeBuildId: string | null;
  endpoints: PlatformEndpoint[];
}

export interface PlatformApp {
  id: string;
  name: string;
  environments: PlatformEnvironment[];
  createdAt: string;
}

export interface PlatformBuild {
  id: string;
  appId: string;
  sha256: string;
  size: number;
  manifest: Manifest & { urls?: Record<string, string> };
  createdAt: string;
}

/** `saveEndpoint` input: with `id` it updates that endpoint, without it creates one. */
export interface EndpointInput {
  id?: string;
  name: string;
  type?: EndpointType;
  templateId?: string;
  template?: { imageName: string; env?: EnvVar[]; containerDiskInGb?: number };
  gpuIds?: string;
  gpuCount?: number;
  instanceIds?: string[];
  workersMin?: number;
  workersMax?: number;
  idleTimeout?: number;
  scalerType?: string;
  scalerValue?: number;
  executionTimeoutMs?: number;
  networkVolumeId?: string;
  locations?: string;
  flashBootType?: string;
  minCudaVersion?: string;
  environmentId?: string;
  buildId?: string;
  env?: EnvVar[];
  /** A queue-based endpoint's schedule (docs/platform.md, "Schedules"); null removes it. */
  schedule?: { cron: string; timezone?: string; input?: Record<string, unknown> } | null;
}

export type JobStatus = "IN_QUEUE" | "IN_PROGRESS" | "COMPLETED" | "FAILED" | "CANCELLED" | "TIMED_OUT";
export const FINAL_JOB_STATUSES: ReadonlySet<string> = new Set(["COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT"]);
export const isFinalJob = (job: { status: string }): boolean => FINAL_JOB_STATUSES.has(job.status);

/** A queue job as the v2 routes answer it. */
export interface Job<Output = unknown> {
  id: string;
  status: JobStatus;
  output?: Output;
  error?: unknown;
  delayTime?: number;
  executionTime?: number;
  workerId?: string;
}

export interface JobPolicy {
  executionTimeout?: number;
  ttl?: number;
  lowPriority?: boolean;
}

export interface RunOptions {
  webhook?: string;
  policy?: JobPolicy;
  signal?: AbortSignal;
}

export interface RunSyncOptions extends RunOptions {
  /** `?wait=` of each runsync / status-sync call, ms (platform range 1000..300000). Default 90000. */
  waitMs?: number;
  /**
   * Overall time to wait for a final status, ms. Default: no limit (cold starts may be long).
   * When it runs out, runsync resolves with the last non-final job — its `id` is never lost.
   */
  timeoutMs?: number;
  /** Called with every non-final answer (to print "still waiting on job <id>"). */
  onPending?: (job: Job) => void;
}

export interface LbResponse {
  status: number;
  headers: Record<string, string>;
  /** Parsed JSON when the answer is JSON, else the text. */
  body: unknown;
}

export interface UploadResult {
  buildId: string;
  /** True when the platform already had an artifact with this sha256 (no bytes were sent). */
  skipped: boolean;
  build: { id: string; sha256: string; size: number };
}

/** A secret as the platform lists it: never its value. */
export interface PlatformSecret {
  id: string;
  name: string;
  createdAt: string;
}
