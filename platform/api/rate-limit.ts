/**
 * Per-endpoint rate limits (reference section 1): requests per window and concurrent requests.
 * A 429 names the limit and how to lift it on the embedded platform (docs/platform.md), and says in
 * `Retry-After` when to come back: the seconds left of the window, or 1 for the concurrency limit (a
 * request in flight ends soon). svc's clients wait that long before sending again.
 */
import { errors } from "../../core/errors.ts";
import type { RateLimits } from "../options.ts";

export type RouteClass = "runsync" | "run" | "status" | "cancel" | "purge";

interface Counter {
  windowStart: number;
  count: number;
  active: number;
}

export class RateLimiter {
  private readonly counters = new Map<string, Counter>();

  constructor(private readonly limits: RateLimits | false) {}

  /** Counts one request; throws RATE_LIMITED (429) over the limit. Call the returned release when done. */
  enter(endpointId: string, route: RouteClass, now = Date.now()): () => void {
    if (!this.limits) return NOOP;
    const limit = this.limits[route];
    const key = `${endpointId}\u0000${route}`;
    let c = this.counters.get(key);
    if (!c) this.counters.set(key, (c = { windowStart: now, count: 0, active: 0 }));
    if (now - c.windowStart >= this.limits.windowMs) {
      c.windowStart = now;
      c.count = 0;
    }
    if (c.count >= limit.requests) {
      const left = Math.max(1, Math.ceil((c.windowStart + this.limits.windowMs - now) / 1000));
      throw errors.RATE_LIMITED(`/${route}`, `${limit.requests} requests per ${this.limits.windowMs / 1000} s`, left);
    }
    if (limit.concurrent > 0 && c.active >= limit.concurrent) throw errors.RATE_LIMITED(`/${route}`, `${limit.concurrent} concurrent requests`, 1);
    c.count++;
    c.active++;
    let released = false;
    const counter = c;
    return () => {
      if (!released) {
        released = true;
        counter.active--;
      }
    };
  }

  forget(endpointId: string): void {
    for (const key of this.counters.keys()) if (key.startsWith(`${endpointId}\u0000`)) this.counters.delete(key);
  }
}

const NOOP = () => {};
