/** Callers waiting until some worker of an endpoint is ready (the LB proxy holds a request for one). */
export class ReadyWaiters {
  private readonly waiters = new Map<string, Set<() => void>>();

  /** A worker of the endpoint became ready: every waiter answers. */
  notify(endpointId: string): void {
    const set = this.waiters.get(endpointId);
    if (set) for (const fn of [...set]) fn();
  }

  /** Waits until some worker of the endpoint is ready (true) or `ms` runs out (false). */
  wait(endpointId: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      let set = this.waiters.get(endpointId);
      if (!set) this.waiters.set(endpointId, (set = new Set()));
      const done = (ok: boolean) => {
        clearTimeout(timer);
        set!.delete(onReady);
        signal?.removeEventListener("abort", onAbort);
        resolve(ok);
      };
      const onReady = () => done(true);
      const onAbort = () => done(false);
      const timer = setTimeout(() => done(false), ms);
      signal?.addEventListener("abort", onAbort, { once: true });
      set.add(onReady);
    });
  }
}
