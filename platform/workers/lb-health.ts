/**
 * Health of load-balanced workers (docs/platform.md): one is ready once GET /ping answers 200 and
 * unhealthy after 3 failed probes in a row. Starting workers are polled every 25 ms (cold start
 * matters), and only while there are any; ready ones every ping interval.
 */
import { request } from "undici";
import type { WorkerInfo } from "./worker-info.ts";
import { lbTarget } from "./lb-target.ts";

const START_POLL_MS = 25;
const FAILED_PROBES = 3;

export interface LbHealthHooks {
  workers(): Iterable<WorkerInfo>;
  ready(w: WorkerInfo): void;
  unhealthy(w: WorkerInfo, why: string): void;
}

export class LbHealth {
  private probe?: NodeJS.Timeout;
  private startProbe?: NodeJS.Timeout;

  constructor(
    private readonly hooks: LbHealthHooks,
    pingIntervalS: number,
  ) {
    const probeMs = Math.max(50, Math.min(1000, pingIntervalS * 1000));
    this.probe = setInterval(() => this.probeReady(), probeMs);
    this.probe.unref();
  }

  /** Probes the ready LB workers once. */
  private probeReady(): void {
    for (const w of this.hooks.workers()) {
      if (w.type !== "LB" || !w.lbPort || !w.ready || w.exited || w.unhealthy || w.stopping || w.probing) continue;
      void this.ping(w).then((ok) => {
        if (ok) {
          w.lbFailures = 0;
          w.lastSeen = Date.now();
          this.hooks.ready(w);
        } else if (w.ready && ++w.lbFailures >= FAILED_PROBES && !w.exited) {
          this.hooks.unhealthy(w, `GET /ping failed ${FAILED_PROBES} times`);
        }
      });
    }
  }

  async ping(w: WorkerInfo): Promise<boolean> {
    w.probing = true;
    try {
      const target = lbTarget(w, "/ping");
      const res = await request(target.url, { dispatcher: target.dispatcher, method: "GET", headersTimeout: 2000, bodyTimeout: 2000 });
      await res.body.dump();
      return res.statusCode === 200;
    } catch {
      return false;
    } finally {
      w.probing = false;
    }
  }

  /** An LB worker was spawned: poll the starting ones until none is left (an idle platform sets no such timer). */
  watchStarts(): void {
    if (this.startProbe) return;
    this.startProbe = setInterval(() => this.pollStarting(), START_POLL_MS);
    this.startProbe.unref();
  }

  private pollStarting(): void {
    let starting = false;
    for (const w of this.hooks.workers()) {
      if (w.type !== "LB" || w.ready || !w.lbPort || !w.proc || w.exited || w.stopping) continue;
      starting = true;
      if (!w.probing) void this.ping(w).then((ok) => ok && this.hooks.ready(w));
    }
    if (!starting && this.startProbe) {
      clearInterval(this.startProbe);
      this.startProbe = undefined;
    }
  }

  close(): void {
    if (this.probe) clearInterval(this.probe);
    if (this.startProbe) clearInterval(this.startProbe);
  }
}
