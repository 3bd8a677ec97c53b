/**
 * The platform's Prometheus metrics (docs/observability.md), on prom-client. The hot path only
 * increments counters and observes histograms through children cached per endpoint (prom-client
 * hashes a label set once per child, not per call); what is a state, not an event (queue depth,
 * workers by state, volume use, GPUs), is read from its source when Prometheus scrapes, in the
 * gauges' collect callbacks. Labels are bounded: endpoint, app, env, status, state, flavour, route,
 * code, volume, gpu — never a job or worker id.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** An endpoint's labels: its name, app and environment ("" when it has none). */
export interface EndpointLabels {
  endpoint: string;
  app: string;
  env: string;
  /** Its workers' flavour: a GPU group or CPU flavour id ("" when not set). */
  flavour: string;
}

/** What the scrape-time gauges read, wired by server.ts from the queue, supervisor and store. */
export interface MetricSources {
  labelsOf(endpointId: string): EndpointLabels | undefined;
  /** Jobs IN_QUEUE and IN_PROGRESS, per endpoint. */
  queues(): Iterable<{ endpointId: string; queued: number; running: number }>;
  /** Live workers' states (initializing, throttled, idle, running, unhealthy). */
  workers(): Iterable<{ endpointId: string; state: string }>;
  volumes(): Promise<Array<{ name: string; usedBytes: number; sizeBytes: number }>>;
  /** The GPUs' memory and utilisation (nvidia-smi); none where the machine has none. */
  gpus(): Promise<Array<{ gpu: string; name: string; memoryUsedBytes: number; memoryTotalBytes: number; utilization: number }>>;
}

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const COLD_START_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300];
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64];
const ENDPOINT = ["endpoint", "app", "env"] as const;
const UNKNOWN: EndpointLabels = { endpoint: "unknown", app: "", env: "", flavour: "" };

type Inc = { inc(value?: number): void };
type Observe = { observe(value: number): void };

/** One endpoint's label-bound children, made on first use. */
interface EndpointChildren {
  jobs: Map<string, Inc>;
  queueDelay: Observe;
  execution: Observe;
  retries: Inc;
  coldStart: Observe;
  oomKills: Inc;
  scheduleRuns: Inc;
  scheduleSkips: Inc;
  batch: Observe;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly children = new Map<string, EndpointChildren>();
  private readonly httpChildren = new Map<string, Inc>();
  private readonly jobs = this.counter("svc_jobs_total", "Jobs that reached a final status, by status.", [...ENDPOINT, "status"]);
  private readonly queueDelay = this.histogram("svc_job_queue_delay_seconds", "Time from a job's acceptance to a worker taking it.", SECONDS_BUCKETS);
  private readonly execution = this.histogram("svc_job_execution_seconds", "Time from a worker taking a job to its final status.", SECONDS_BUCKETS);
  private readonly retries = this.counter("svc_job_retries_total", "Jobs run again: declared retries and hand-backs of a worker that died.", ENDPOINT);
  private readonly coldStart = new Histogram({
    name: "svc_worker_cold_start_seconds",
    help: "Time from a worker's process start to its first job request (queue) or first healthy ping (load-balanced).",
    labelNames: [...ENDPOINT, "flavour"],
    buckets: COLD_START_BUCKETS,
    registers: [this.registry],
  });
  private readonly oomKills = this.counter("svc_worker_oom_kills_total", "Workers the kernel killed for exceeding their flavour's memory.", [
    ...ENDPOINT,
    "flavour",
  ]);
  private readonly scheduleRuns = this.counter("svc_schedule_runs_total", "Jobs queued by an endpoint's schedule.", ENDPOINT);
  private readonly scheduleSkips = this.counter("svc_schedule_skips_total", "Scheduled runs skipped because the previous run was still going.", ENDPOINT);
  private readonly batch = new Histogram({
    name: "svc_job_batch_size",
    help: "Jobs handed to a worker in one answer (batch endpoints and runs of fast jobs).",
    labelNames: ENDPOINT,
    buckets: BATCH_BUCKETS,
    registers: [this.registry],
  });
  private readonly http = this.counter("svc_http_requests_total", "HTTP requests answered, by route pattern, method and status code.", [
    "route",
    "method",
    "code",
  ]);

  constructor(private readonly sources: MetricSources) {
    collectDefaultMetrics({ register: this.registry, prefix: "svc_" });
    this.gauges();
  }

  /** The Prometheus text exposition; the label cache is dropped so a renamed endpoint gets fresh labels. */
  async scrape(): Promise<{ contentType: string; text: string }> {
    this.children.clear();
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }

  /** A job's final status; its execution time when a worker had taken it. */
  jobFinished(endpointId: string, status: string, startedAt: number | null, finishedAt: number): void {
    const c = this.of(endpointId);
    let byStatus = c.jobs.get(status);
    if (!byStatus) c.jobs.set(status, (byStatus = this.jobs.labels({ ...this.endpointLabels(endpointId), status })));
    byStatus.inc();
    if (startedAt !== null) c.execution.observe((finishedAt - startedAt) / 1000);
  }

  jobStarted(endpointId: string, queuedAt: number, startedAt: number): void {
    this.of(endpointId).queueDelay.observe((startedAt - queuedAt) / 1000);
  }

  jobRetried(endpointId: string): void {
    this.of(endpointId).retries.inc();
  }

  workerColdStart(endpointId: string, ms: number): void {
    this.of(endpointId).coldStart.observe(ms / 1000);
  }

  workerOomKilled(endpointId: string): void {
    this.of(endpointId).oomKills.inc();
  }

  scheduleRun(endpointId: string, skipped: boolean): void {
    const c = this.of(endpointId);
    (skipped ? c.scheduleSkips : c.scheduleRuns).inc();
  }

  batchTaken(endpointId: string, size: number): void {
    this.of(endpointId).batch.observe(size);
  }

  /** `route` is the route's pattern (`/v2/:endpoint/runsync`), never the raw path. */
  httpRequest(route: string, method: string, code: number): void {
    const key = `${method} ${route} ${code}`;
    let child = this.httpChildren.get(key);
    if (!child) this.httpChildren.set(key, (child = this.http.labels({ route, method, code: String(code) })));
    child.inc();
  }

  // ---------------------------------------------------------------------------------------------

  private endpointLabels(endpointId: string) {
    const { endpoint, app, env } = this.sources.labelsOf(endpointId) ?? UNKNOWN;
    return { endpoint, app, env };
  }

  private of(endpointId: string): EndpointChildren {
    let c = this.children.get(endpointId);
    if (c) return c;
    const labels = this.sources.labelsOf(endpointId) ?? UNKNOWN;
    const base = { endpoint: labels.endpoint, app: labels.app, env: labels.env };
    const withFlavour = { ...base, flavour: labels.flavour };
    c = {
      jobs: new Map(),
      queueDelay: this.queueDelay.labels(base),
      execution: this.execution.labels(base),
      retries: this.retries.labels(base),
      coldStart: this.coldStart.labels(withFlavour),
      oomKills: this.oomKills.labels(withFlavour),
      scheduleRuns: this.scheduleRuns.labels(base),
      scheduleSkips: this.scheduleSkips.labels(base),
      batch: this.batch.labels(base),
    };
    this.children.set(endpointId, c);
    return c;
  }

  private counter<L extends string>(name: string, help: string, labelNames: readonly L[]) {
    return new Counter<L>({ name, help, labelNames, registers: [this.registry] });
  }

  private histogram(name: string, help: string, buckets: number[]) {
    return new Histogram<(typeof ENDPOINT)[number]>({ name, help, labelNames: ENDPOINT, buckets, registers: [this.registry] });
  }

  /** The gauges read at scrape time. */
  private gauges(): void {
    const { sources, registry } = this;
    this.queueGauge("svc_queue_depth", "Jobs waiting in an endpoint's queue (IN_QUEUE).", "queued");
    this.queueGauge("svc_jobs_running", "Jobs a worker holds (IN_PROGRESS).", "running");
    new Gauge({
      name: "svc_workers",
      help: "Live workers by state (initializing, throttled, idle, running, unhealthy).",
      labelNames: [...ENDPOINT, "flavour", "state"],
      registers: [registry],
      collect() {
        this.reset();
        for (const w of sources.workers()) this.inc({ ...(sources.labelsOf(w.endpointId) ?? UNKNOWN), state: w.state });
      },
    });
    this.volumeGauges();
    this.gpuGauges();
  }

  /** A per-endpoint gauge of one of the queue's counts, read at scrape time. */
  private queueGauge(name: string, help: string, count: "queued" | "running"): void {
    const { sources } = this;
    new Gauge({
      name,
      help,
      labelNames: ENDPOINT,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const q of sources.queues()) {
          const { endpoint, app, env } = sources.labelsOf(q.endpointId) ?? UNKNOWN;
          this.set({ endpoint, app, env }, q[count]);
        }
      },
    });
  }

  private volumeGauges(): void {
    const { sources, registry } = this;
    const size = new Gauge({ name: "svc_volume_size_bytes", help: "A network volume's size.", labelNames: ["volume"], registers: [registry] });
    new Gauge({
      name: "svc_volume_used_bytes",
      help: "Bytes a network volume's files hold.",
      labelNames: ["volume"],
      registers: [registry],
      async collect() {
        this.reset();
        size.reset();
        for (const v of await sources.volumes()) {
          this.set({ volume: v.name }, v.usedBytes);
          size.set({ volume: v.name }, v.sizeBytes);
        }
      },
    });
  }

  private gpuGauges(): void {
    const { sources, registry } = this;
    const labelNames = ["gpu", "name"] as const;
    const total = new Gauge({ name: "svc_gpu_memory_total_bytes", help: "A GPU's memory.", labelNames, registers: [registry] });
    const utilization = new Gauge({
      name: "svc_gpu_utilization_ratio",
      help: "A GPU's utilisation over the driver's last sample period (0 to 1).",
      labelNames,
      registers: [registry],
    });
    new Gauge({
      name: "svc_gpu_memory_used_bytes",
      help: "A GPU's memory in use (nvidia-smi).",
      labelNames,
      registers: [registry],
      async collect() {
        this.reset();
        total.reset();
        utilization.reset();
        for (const g of await sources.gpus()) {
          const labels = { gpu: g.gpu, name: g.name };
          this.set(labels, g.memoryUsedBytes);
          total.set(labels, g.memoryTotalBytes);
          utilization.set(labels, g.utilization);
        }
      },
    });
  }
}
