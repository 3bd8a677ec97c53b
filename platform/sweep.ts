/** The platform's background work (./server.ts starts it): one pass every sweep interval. */
import type { ConnectionCaps } from "./api/connection-caps.ts";
import type { PlatformContext } from "./context.ts";
import { PRUNE_CHUNK } from "./queue/queue.ts";
import { sweepFiles } from "./api/files.ts";
import { sweepUploads } from "./volumes/multipart.ts";

/** Background work every sweep interval: timeouts and expiry, schedules, liveness, retention, log batches, connections, files. */
export function startSweep(ctx: PlatformContext, closing: () => boolean, caps: ConnectionCaps): NodeJS.Timeout {
  const { queue, supervisor, store, options } = ctx;
  /** Expired jobs go PRUNE_CHUNK at a time, requests answered in between (one delete of thousands stalled them). */
  const pruneExpired = (now: number): void => {
    if (closing()) return;
    try {
      if (queue.prune(now, PRUNE_CHUNK) === PRUNE_CHUNK) setImmediate(() => pruneExpired(now));
    } catch (error) {
      options.log(`pruning expired jobs failed: ${(error as Error).stack ?? error}`);
    }
  };

  let sweeping = false;
  let ticks = 0;
  const sweep = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    try {
      const now = Date.now();
      queue.sweep(now);
      if (!closing()) ctx.scheduler.tick(now); // scheduled endpoints' due slots; none while stopping: no worker would take them (docs/platform.md, "Schedules")
      supervisor.sweep(now);
      caps.sweep(now);
      pruneExpired(now);
      store.logs.flush(now); // lines go on their own timer; this applies the retention when due
      if (ticks++ % 5 === 0) store.builds.pruneUploads(now);
      if (ticks % 60 === 0) {
        void sweepFiles(ctx, now).catch((error) => options.log(`file sweep failed: ${(error as Error).message}`));
        void sweepUploads(ctx, now).catch((error) => options.log(`volume upload sweep failed: ${(error as Error).message}`));
        store.workers.prune(now - 24 * 3600_000);
      }
    } catch (error) {
      options.log(`sweep failed: ${(error as Error).stack ?? error}`);
    } finally {
      sweeping = false;
    }
  }, options.sweepIntervalMs);
  sweep.unref();
  return sweep;
}
