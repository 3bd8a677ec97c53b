/**
 * A worker's log rate: a token bucket over the characters of its lines (`rate` per second, up to
 * `burst` at once). Lines past it are dropped, never stored, and counted, until half the burst is
 * back; then one marker line says how much was dropped and why, before the next line kept (or
 * from a timer, or at the worker's exit), so a reader of `svc logs` sees the gap. A function writing 10 GB of logs then costs the platform the
 * reading of its pipe, not a database of it. docs/platform.md, "Worker logs".
 */
import type { LogRate } from "../limit-options.ts";
import { formatBytes } from "./flavours.ts";

export class LogBudget {
  private tokens: number;
  private at: number;
  private droppedLines = 0;
  private droppedChars = 0;
  /** Past the rate: lines are dropped until the bucket is half full again, so that the kept ones come in runs, one marker between runs. */
  private droppingNow = false;

  constructor(
    private readonly rate: LogRate,
    now = Date.now(),
  ) {
    this.tokens = rate.burst;
    this.at = now;
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.rate.burst, this.tokens + ((now - this.at) / 1000) * this.rate.perSecond);
    this.at = now;
    if (this.droppingNow && this.tokens >= this.rate.burst / 2) this.droppingNow = false;
  }

  /** May a line of `chars` characters be kept? A dropped one is counted. */
  take(chars: number, now = Date.now()): boolean {
    this.refill(now);
    if (!this.droppingNow && this.tokens >= chars) {
      this.tokens -= chars;
      return true;
    }
    this.droppingNow = true;
    this.droppedLines++;
    this.droppedChars += chars;
    return false;
  }

  /** Is it dropping now (so whole chunks may go unsplit)? */
  dropping(now = Date.now()): boolean {
    this.refill(now);
    return this.droppingNow;
  }

  /** Counts lines dropped without being looked at one by one. */
  count(lines: number, chars: number): void {
    this.droppedLines += lines;
    this.droppedChars += chars;
  }

  /** Lines were dropped and the rate allows lines again: the marker is due (a worker gone quiet gets it from a timer). */
  recovered(now = Date.now()): boolean {
    this.refill(now);
    return this.droppedLines > 0 && !this.droppingNow;
  }

  /** The marker for what was dropped since the last one, if anything was. */
  marker(): string | undefined {
    if (this.droppedLines === 0) return undefined;
    const text = `${this.droppedLines} line(s) of this worker's output dropped (${formatBytes(this.droppedChars)}): over its log rate of ${formatBytes(this.rate.perSecond)}/s (bursts of ${formatBytes(this.rate.burst)})`;
    this.droppedLines = 0;
    this.droppedChars = 0;
    return text;
  }
}
