/**
 * A worker's signals (contracts section 4): the jobs to cancel and whether to stop, answered to
 * its long poll (GET /v2/_worker/<id>/signals). One poller per worker: a newer poll answers the older.
 */
import type { WorkerInfo } from "./worker-info.ts";

/** Answers the worker's open poll now (a signal came, or it exited). */
export function wakeSignals(w: WorkerInfo): void {
  const fn = w.signalWaiter;
  w.signalWaiter = undefined;
  fn?.();
}

/** Long poll for signals: `{cancel, stop}` when there is one, else null after `waitMs`. */
export async function waitSignals(w: WorkerInfo, waitMs: number, abort?: AbortSignal): Promise<{ cancel: string[]; stop: boolean } | null> {
  const take = () => {
    if (w.cancel.length === 0 && !w.stop) return null;
    const out = { cancel: w.cancel, stop: w.stop };
    w.cancel = [];
    return out;
  };
  const now = take();
  if (now || waitMs <= 0) return now;
  w.openPolls++;
  try {
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        abort?.removeEventListener("abort", done);
        if (w.signalWaiter === done) w.signalWaiter = undefined;
        resolve();
      };
      const previous = w.signalWaiter;
      w.signalWaiter = done;
      previous?.(); // one poller per worker: an older poll answers now
      const timer = setTimeout(done, waitMs);
      abort?.addEventListener("abort", done, { once: true });
    });
  } finally {
    w.openPolls--;
  }
  return take();
}
