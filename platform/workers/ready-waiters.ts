/** Callers waiting until some worker of an endpoint is ready (the LB proxy holds a request for one). */
import { KeyedWaiters, onAbort } from "../_keyed-waiters.ts";

export class ReadyWaiters {
  private readonly waiters = new KeyedWaiters<boolean>();

  /** A worker of the endpoint became ready: every waiter answers. */
  notify(endpointId: string): void {
    this.waiters.notify(endpointId, true);
  }

  /** Waits until some worker of the endpoint is ready (true) or `ms` runs out or `signal` aborts (false). */
  wait(endpointId: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    return this.waiters.wait(endpointId, ms, false, signal && onAbort(signal));
  }
}
