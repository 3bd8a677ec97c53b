/**
 * Callers waiting on a key (a job, an endpoint) until notify answers them, their wait runs out or
 * they go away, whichever comes first: the one shape behind runsync's wait for a job's final status
 * (queue/queue.ts), a /stream read's wait for a chunk (queue/job-streams.ts) and the LB proxy's wait
 * for a ready worker (workers/ready-waiters.ts).
 */

/** Calls `fn` once if the caller of a wait goes away; answers how to stop listening. */
export type OnClientGone = (fn: () => void) => () => void;

/** An AbortSignal as an OnClientGone. */
export const onAbort =
  (signal: AbortSignal): OnClientGone =>
  (fn) => {
    signal.addEventListener("abort", fn, { once: true });
    return () => signal.removeEventListener("abort", fn);
  };

/** `T` holds no undefined: close() reads undefined as "no answer". */
export class KeyedWaiters<T extends {} | null> {
  private readonly waiters = new Map<string, Set<(value: T) => void>>();

  /** The value notify gives `key` within `waitMs`, else `otherwise` (the wait ran out, or the caller went away first). */
  wait(key: string, waitMs: number, otherwise: T, onGone?: OnClientGone): Promise<T> {
    return new Promise<T>((resolve) => {
      let set = this.waiters.get(key);
      if (!set) this.waiters.set(key, (set = new Set()));
      let stopListening: (() => void) | undefined;
      const done = (value: T) => {
        clearTimeout(timer);
        set!.delete(done);
        stopListening?.();
        resolve(value);
      };
      set.add(done);
      const timer = setTimeout(done, waitMs, otherwise);
      stopListening = onGone?.(() => done(otherwise));
    });
  }

  /** Answers every wait on `key` with `value`. */
  notify(key: string, value: T): void {
    const set = this.waiters.get(key);
    if (!set) return;
    this.waiters.delete(key);
    for (const answer of [...set]) answer(value);
  }

  /** Answers every wait on each key with `answerFor(key)`, or leaves it to its timer where that is undefined (shutdown). */
  close(answerFor: (key: string) => T | undefined): void {
    for (const [key, set] of this.waiters) {
      const value = answerFor(key);
      if (value !== undefined) for (const answer of [...set]) answer(value);
    }
    this.waiters.clear();
  }
}
