/**
 * The autoscaler: keeps workersMin warm, scales up to workersMax with the hosted scalers'
 * semantics (docs/platform.md, "Autoscaling"), stops workers idle longer than idleTimeout, and
 * replaces outdated ones (their endpoint changed). Queue endpoints: the first worker starts at once;
 * QUEUE_DELAY adds workers when a queued job has waited more than scalerValue seconds;
 * REQUEST_COUNT keeps ceil((queued + running jobs) / scalerValue) workers. Load-balanced ones:
 * ceil(in-flight requests / scalerValue). lowPriority jobs never cause a scale-up. An endpoint with a
 * warm spare (the dev server's, ./backends/warm-spares.ts) that moves to a new build gets a new worker for each
 * ready one of the old build it stops: the next call finds the new build warm.
 */
import type { EndpointsRepo } from "../store/endpoints.ts";
import type { EndpointRecord } from "../store/index.ts";
import type { JobQueue } from "../queue/queue.ts";
import type { Supervisor, WorkerInfo } from "./supervisor.ts";

export class Autoscaler {
  /** LB requests waiting for a ready worker, per endpoint. */
  readonly lbWaiting = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private kicked = new Set<string>();

  constructor(
    private readonly endpoints: EndpointsRepo,
    private readonly queue: JobQueue,
    private readonly supervisor: Supervisor,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * Re-evaluates one endpoint soon (a job arrived, an LB request waits). Not before start(): until
   * then the platform does not listen, and a worker's launch plan would carry no URL (the jobs
   * recovered at start wait for start()'s first tick).
   */
  kick(endpointId: string): void {
    if (!this.timer || this.kicked.has(endpointId)) return;
    this.kicked.add(endpointId);
    queueMicrotask(() => {
      this.kicked.delete(endpointId);
      const endpoint = this.endpoints.get(endpointId);
      if (endpoint) this.scale(endpoint);
    });
  }

  /** Called for every queued job: only an endpoint with no worker at all needs an immediate look. */
  onQueued(endpointId: string, lowPriority: boolean): void {
    if (lowPriority) return;
    for (const w of this.supervisor.workers.values()) if (w.endpointId === endpointId && !w.stopping) return;
    this.kick(endpointId);
  }

  tick(now = Date.now()): void {
    for (const endpoint of this.endpoints.list()) this.scale(endpoint, now);
  }

  scale(endpoint: EndpointRecord, now = Date.now()): void {
    const key = this.supervisor.configKey(endpoint);
    const all = this.supervisor.forEndpoint(endpoint.id).filter((w) => !w.stopping && !w.unhealthy);
    const current: WorkerInfo[] = [];
    let replaced = 0;
    for (const w of all) {
      if (w.configKey === key) current.push(w);
      else if (!this.supervisor.busy(w)) {
        void this.supervisor.stop(w, "outdated: the endpoint changed");
        if (w.ready) replaced++;
      } else this.supervisor.markOutdated(w); // its running jobs finish; new ones go to the current build only
    }
    const n = current.length;
    const min = Math.min(endpoint.workersMin, endpoint.workersMax);
    let target = Math.max(min, n);
    if (replaced > 0 && this.supervisor.local.spares.held(endpoint.id)) target = Math.max(target, replaced);

    if (endpoint.type === "QB") {
      const stats = this.queue.stats(endpoint.id, now);
      const unrunnable = stats.queued > 0 ? this.supervisor.problems.unrunnable(endpoint) : undefined;
      if (unrunnable) {
        this.supervisor.problems.failUnrunnable(endpoint, unrunnable);
        return;
      }
      if (stats.queuedNormal > 0) {
        if (n === 0) target = Math.max(target, 1);
        if (endpoint.scalerType === "REQUEST_COUNT") {
          target = Math.max(target, Math.ceil((stats.queuedNormal + stats.running) / Math.max(1, endpoint.scalerValue)));
        } else if (stats.oldestNormalWaitMs > endpoint.scalerValue * 1000) {
          const spare = current.filter((w) => !w.ready || !this.supervisor.busy(w)).length;
          const extra = stats.queuedNormal - spare;
          if (extra > 0) target = Math.max(target, n + extra);
        }
      }
    } else {
      const waiting = this.lbWaiting.get(endpoint.id) ?? 0;
      let inFlight = waiting;
      for (const w of current) inFlight += w.inFlight;
      const perWorker = Math.max(1, endpoint.scalerValue);
      const desired = Math.ceil(inFlight / perWorker);
      target = Math.max(target, desired);
      if (waiting > 0 && current.every((w) => !w.ready)) target = Math.max(target, n + (n === 0 ? 1 : 0));
    }
    target = Math.min(target, endpoint.workersMax);

    for (let i = n; i < target; i++) if (!this.supervisor.start(endpoint)) break;

    // Scale down: idle longer than idleTimeout, above workersMin; first those still waiting for a GPU
    // (nothing started yet: else each would start, load its model, and idle out in turn).
    // Demand is read once: stopping an idle or GPU-waiting worker changes no queue or LB wait.
    let live = n;
    if (live <= min || this.hasDemand(endpoint, now)) return;
    const idleMs = endpoint.idleTimeout * 1000;
    const throttled = current.filter((w) => this.supervisor.state(w) === "throttled");
    for (const w of [...throttled, ...current.filter((w) => !throttled.includes(w))]) {
      if (live <= min) break;
      if (throttled.includes(w)) void this.supervisor.stop(w, "no queued job while it waits for a GPU");
      else if (w.ready && !this.supervisor.busy(w) && now - w.idleSince >= idleMs) void this.supervisor.stop(w, `idle for ${endpoint.idleTimeout} s`);
      else continue;
      live--;
    }
  }

  private hasDemand(endpoint: EndpointRecord, now: number): boolean {
    if (endpoint.type === "LB") return (this.lbWaiting.get(endpoint.id) ?? 0) > 0;
    return this.queue.stats(endpoint.id, now).queued > 0;
  }
}
