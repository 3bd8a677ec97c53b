/**
 * Restart policy and problems of an endpoint's workers (docs/platform.md, "A worker that cannot
 * import its module"): a worker that exits before it is ready backs its endpoint's restarts off
 * (RESTART_BACKOFF_MS), the endpoint's /health shows why, and after EXITS_BEFORE_FAILING_JOBS
 * such exits in a row its queued jobs fail. Both are kept per worker config: a redeploy starts at once.
 */
import type { EndpointProblem, WorkerError, WorkerInfo } from "./worker-info.ts";

/** Restart backoff of workers that exit before they are ready: 1 s, doubling, at most 30 s. */
export const RESTART_BACKOFF_MS = { first: 1000, max: 30_000 } as const;
/** Early exits in a row after which the endpoint's queued jobs fail (the first may be a fluke). */
const EXITS_BEFORE_FAILING_JOBS = 2;

export class RestartPolicy {
  /** Endpoint id → early exits in a row of workers of one config, and when the next may start. */
  private readonly startFailures = new Map<string, { configKey: string; count: number; until: number }>();
  /** Endpoint id → why its workers of one config cannot serve. */
  private readonly problems = new Map<string, { configKey: string; problem: EndpointProblem }>();

  /** Whether the endpoint's workers of its current config back off after early exits (`configKey` hashes: asked last). */
  backingOff(endpointId: string, now: number, configKey: () => string): boolean {
    const failed = this.startFailures.get(endpointId);
    return failed !== undefined && failed.until > now && failed.configKey === configKey();
  }

  /** Why the endpoint's workers of this config cannot serve, if a worker showed it. */
  problem(endpointId: string, configKey: () => string): EndpointProblem | undefined {
    const p = this.problems.get(endpointId);
    return p && p.configKey === configKey() ? p.problem : undefined;
  }

  setProblem(w: WorkerInfo, error: WorkerError): void {
    const { error_traceback: _trace, ...shown } = error;
    this.problems.set(w.endpointId, { configKey: w.configKey, problem: { ...shown, workerId: w.id, since: new Date().toISOString() } });
  }

  /** A worker is ready: its config starts without delay again, and no problem shows (a report follows if it is broken). */
  ready(w: WorkerInfo): void {
    if (this.startFailures.get(w.endpointId)?.configKey === w.configKey) this.startFailures.delete(w.endpointId);
    if (!w.failure && this.problems.get(w.endpointId)?.configKey === w.configKey) this.problems.delete(w.endpointId);
  }

  /** A worker exited (or could not start) before it was ready: the backoff, the problem shown, whether queued jobs fail. */
  startFailed(w: WorkerInfo, why: string): { error: WorkerError; delay: number; failJobs: boolean } {
    const previous = this.startFailures.get(w.endpointId);
    const count = previous?.configKey === w.configKey ? previous.count + 1 : 1;
    const delay = Math.min(RESTART_BACKOFF_MS.max, RESTART_BACKOFF_MS.first * 2 ** (count - 1));
    this.startFailures.set(w.endpointId, { configKey: w.configKey, count, until: Date.now() + delay });
    const output = w.lastLines.filter((line) => line.trim()).slice(-1)[0];
    const error: WorkerError = {
      error_type: "WorkerStartError",
      error_message: `The worker ${why}${count > 1 ? ` (${count} times in a row)` : ""}${output ? `; its last output: ${output}` : ""}. See the endpoint's worker logs.`,
    };
    this.setProblem(w, error);
    return { error, delay, failJobs: count >= EXITS_BEFORE_FAILING_JOBS };
  }
}
