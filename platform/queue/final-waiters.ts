/** Callers waiting for a job's final status (runsync, /status-sync), answered when it ends, their wait runs out or they go away. */
import type { JobView } from "./views.ts";

/** Calls `fn` once if the client of a wait goes away; answers how to stop listening. */
export type OnClientGone = (fn: () => void) => () => void;

export class FinalWaiters {
  private readonly waiters = new Map<string, Set<(view: JobView | null) => void>>();

  /** The job's final view, or null when `waitMs` runs out or the client goes away first. */
  wait(jobId: string, waitMs: number, onGone?: OnClientGone): Promise<JobView | null> {
    return new Promise<JobView | null>((resolve) => {
      let set = this.waiters.get(jobId);
      if (!set) this.waiters.set(jobId, (set = new Set()));
      let stopListening: (() => void) | undefined;
      const done = (view: JobView | null) => {
        clearTimeout(timer);
        set!.delete(done);
        stopListening?.();
        resolve(view);
      };
      set.add(done);
      const timer = setTimeout(done, waitMs, null);
      stopListening = onGone?.(() => done(null));
    });
  }

  notify(jobId: string, view: JobView): void {
    const set = this.waiters.get(jobId);
    if (!set) return;
    this.waiters.delete(jobId);
    for (const fn of [...set]) fn(view);
  }

  /** Answers every wait with the job's view as it is now (shutdown). */
  close(viewOf: (jobId: string) => JobView | undefined): void {
    for (const [jobId, set] of this.waiters) {
      const view = viewOf(jobId);
      if (view) for (const fn of [...set]) fn(view);
    }
    this.waiters.clear();
  }
}
