/**
 * One endpoint's waiting jobs and the workers long-polling for them: a FIFO (a handed-back job goes
 * to its front), the takers in arrival order and the counts the autoscaler reads. A job leaves the
 * FIFO lazily: one cancelled, expired or purged stays there until shifted and is skipped then, so
 * ending a job costs no search. Handing a job over is the queue's (./queue.ts): it touches the store.
 */
import { Deque } from "./_deque.ts";
import type { ActiveJob } from "./job-records.ts";
import type { OnClientGone } from "../_keyed-waiters.ts";

/** A worker's long poll: answered with a job, or null when its wait runs out or it goes away. */
export interface Taker {
  workerId: string;
  done(job: ActiveJob | null): void;
}

export class EndpointQueue {
  private readonly pending = new Deque<ActiveJob>();
  private takers: Taker[] = [];
  /** Jobs IN_QUEUE, those waiting out a declared retry's delay included (`pending` may also hold stale entries). */
  queued = 0;
  /** The same, less lowPriority jobs (they never ask for workers). */
  queuedNormal = 0;

  /** `active`: the queue's jobs waiting or running; a job in `pending` that is not there, or not as itself, is stale. */
  constructor(private readonly active: ReadonlyMap<string, ActiveJob>) {}

  /** True while `job` is still this queue's to hand out (not taken, cancelled, expired or purged). */
  isWaiting(job: ActiveJob): boolean {
    return job.status === "IN_QUEUE" && this.active.get(job.id) === job;
  }

  /** Counts a job in (1) or out (-1) of the queued totals. */
  count(job: ActiveJob, by: 1 | -1): void {
    this.queued += by;
    if (!job.lowPriority) this.queuedNormal += by;
  }

  /** Queues a job at the end, or at the front (a hand-back). */
  push(job: ActiveJob, front: boolean): void {
    if (front) this.pending.unshift(job);
    else this.pending.push(job);
    this.count(job, 1);
  }

  /** The next job to hand out, counted out, skipping stale entries; undefined when none waits. */
  shift(): ActiveJob | undefined {
    for (let job = this.pending.shift(); job; job = this.pending.shift()) {
      if (!this.isWaiting(job)) continue;
      this.count(job, -1);
      return job;
    }
    return undefined;
  }

  /** The longest-waiting taker, taken off the list (it is handed the job being queued). */
  nextTaker(): Taker | undefined {
    return this.takers.shift();
  }

  /** Waits up to `waitMs` for the job a push hands over (`nextTaker`), or null when the wait runs out or the client goes (`onGone`). */
  poll(workerId: string, waitMs: number, onGone?: OnClientGone): Promise<ActiveJob | null> {
    return new Promise((resolve) => {
      let settled = false;
      let stopListening: (() => void) | undefined;
      const finish = (value: ActiveJob | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        stopListening?.();
        resolve(value);
      };
      const taker: Taker = { workerId, done: finish };
      const drop = () => {
        const at = this.takers.indexOf(taker);
        if (at >= 0) this.takers.splice(at, 1);
      };
      const timer = setTimeout(() => {
        drop();
        finish(null);
      }, waitMs);
      this.takers.push(taker);
      // The client gone (a closed connection) ends the poll: no job goes to it. May call back at once.
      stopListening = onGone?.(() => {
        drop();
        finish(null);
      });
      if (settled) stopListening?.();
    });
  }

  /** Long polls waiting here. */
  get takerCount(): number {
    return this.takers.length;
  }

  /** Ends one worker's long polls (it is stopping) with no job. */
  releaseTakers(workerId: string): void {
    const mine = this.takers.filter((t) => t.workerId === workerId);
    if (mine.length === 0) return;
    this.takers = this.takers.filter((t) => t.workerId !== workerId);
    for (const t of mine) t.done(null);
  }

  /** Ends every long poll with no job (the endpoint is gone, or the platform stops). */
  endTakers(): void {
    for (const t of this.takers.splice(0)) t.done(null);
  }

  /**
   * Empties the queue, ending each job still waiting in it or in `delayed` (jobs waiting out a
   * retry's delay) with `end`, which takes it out of memory; answers how many.
   */
  endAll(delayed: Iterable<ActiveJob>, end: (job: ActiveJob) => void): number {
    let ended = 0;
    for (const job of [...this.pending, ...delayed]) {
      if (!this.isWaiting(job)) continue;
      end(job);
      ended++;
    }
    this.pending.clear();
    this.queued = 0;
    this.queuedNormal = 0;
    return ended;
  }

  /** How long the oldest waiting job that is not lowPriority has waited at `now` (0: none). */
  oldestNormalWaitMs(now: number): number {
    if (this.queuedNormal === 0) return 0;
    for (const job of this.pending) if (!job.lowPriority && this.isWaiting(job)) return now - job.createdAt;
    return 0;
  }
}
