/** The shapes of /console/api/'s answers, as the pages read them (platform/console/views.ts makes them). */
export interface EndpointSummary {
  id: string;
  name: string;
  type: "QB" | "LB";
  url: string;
  gpu: { ids: string; count: number } | null;
  workersMin: number;
  workersMax: number;
  workers: number;
  queued: number;
  running: number;
  scheduled: boolean;
}

export interface Overview {
  apps: Array<{ id: string; name: string; environments: Array<{ id: string; name: string; activeBuildId: string | null; endpoints: EndpointSummary[] }> }>;
  other: EndpointSummary[];
}

export interface WorkerRow {
  id: string;
  state: string;
  startedAt: string;
  coldStartMs: number | null;
  node: string;
  gpus: number[];
  limits: { flavour: string; memoryBytes: number; vcpus: number; enforced: string[]; by: string } | null;
  memoryBytes: number | null;
  outdated: boolean;
}

export interface EndpointDetail extends EndpointSummary {
  executionTimeoutMs: number;
  idleTimeout: number;
  workerList: WorkerRow[];
  schedule: { cron: string; timezone?: string; nextRunAt: string | null; lastRunAt: string | null; lastStatus: string | null; skipped: number } | null;
  problem: { error_type: string; error_message: string } | null;
}

export interface JobRow {
  id: string;
  status: string;
  kind: string;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  delayMs: number | null;
  executionMs: number | null;
  inputBytes: number;
  workerId: string | null;
  attempts: number;
  error: { type: string | null; message: string; traceback: string | null } | null;
}

export interface LogPage {
  cursor: number | null;
  lines: Array<{ id: number; at: string; workerId: string; line: string }>;
}

/** One sample of an endpoint's charts (platform/console/timeseries.ts makes them; the platform imports this type too). */
export interface SeriesPoint {
  /** ms since the epoch: the end of the sample's interval. */
  t: number;
  /** Jobs waiting at the sample. */
  queued: number;
  /** Jobs running at the sample. */
  running: number;
  /** Jobs that ended in the interval, per second. */
  throughput: number;
  /** Execution time of the jobs that ended in the interval, ms (null when none ended). */
  p50: number | null;
  p99: number | null;
  failed: number;
  /** Workers that became ready in the interval, and their mean cold start, ms. */
  coldStarts: number;
  coldStartMs: number | null;
}

export interface Volume {
  id: string;
  name: string;
  sizeGb: number;
  usedBytes: number | null;
  dataCenterId: string;
  createdAt: string;
  endpoints: Array<{ id: string; name: string }>;
}

export interface AppBuilds {
  app: string;
  builds: Array<{ id: string; createdAt: string; sizeBytes: number; sha256: string; endpoints: string[]; activeIn: string[] }>;
}
