/**
 * A worker's stdout and stderr as log lines. The work is linear in the output and its memory
 * bounded whatever the worker writes: each chunk is scanned once for newlines, and a line longer
 * than MAX_LOG_LINE is cut there with CUT_MARKER, the rest of it up to the next newline dropped
 * unread into memory (docs/platform.md, "Worker logs": a function printing 100 MB on one line).
 */
import type { ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";
import { CUT_MARKER, MAX_LOG_LINE } from "../store/logs.ts";
import type { LogRate } from "../limit-options.ts";
import { LogBudget } from "./log-rate.ts";
import type { WorkerInfo } from "./worker-info.ts";

/** A worker's last lines kept in memory: why it exited, when it exits before it is ready. */
const LAST_LINES_KEPT = 8;

/** Splits text chunks into lines (without `\n` or a trailing `\r`), cutting long ones. */
export class LineSplitter {
  /** The start of the current line (never longer than MAX_LOG_LINE). */
  private pending = "";
  /** The current line was cut: skip to its end. */
  private dropping = false;

  constructor(
    private readonly emit: (line: string) => void,
    private readonly max = MAX_LOG_LINE,
  ) {}

  push(chunk: string): void {
    let at = 0;
    while (at < chunk.length) {
      const nl = chunk.indexOf("\n", at);
      const end = nl < 0 ? chunk.length : nl;
      if (this.dropping) {
        if (nl < 0) return;
        this.dropping = false;
      } else if (this.pending.length + (end - at) > this.max) {
        const head = this.pending + chunk.slice(at, at + this.max - this.pending.length);
        this.pending = "";
        this.emit(head + CUT_MARKER);
        if (nl < 0) {
          this.dropping = true;
          return;
        }
      } else if (nl < 0) {
        this.pending += chunk.slice(at);
        return;
      } else {
        this.line(this.pending + chunk.slice(at, end));
        this.pending = "";
      }
      at = end + 1;
    }
  }

  /**
   * Drops a chunk whole (its worker is over its log rate): the lines it ends are counted, not cut
   * out one by one; the text after its last newline starts the next line as usual.
   */
  skip(chunk: string): { lines: number; chars: number } {
    let lines = 0;
    let last = -1;
    for (let at = chunk.indexOf("\n"); at >= 0; at = chunk.indexOf("\n", at + 1)) {
      lines++;
      last = at;
    }
    if (last < 0) {
      this.dropping = true; // the current line goes too, up to its end
      this.pending = "";
      return { lines: 0, chars: chunk.length };
    }
    this.pending = "";
    this.dropping = false;
    this.push(chunk.slice(last + 1));
    return { lines, chars: last + 1 };
  }

  /** The stream ended: a last line without a newline is still a line. */
  end(): void {
    if (this.pending) this.line(this.pending);
    this.pending = "";
    this.dropping = false;
  }

  private line(text: string): void {
    this.emit(text.endsWith("\r") ? text.slice(0, -1) : text);
  }
}

/**
 * Calls `onLine` for each line a worker writes to its stdout or stderr (each stream split apart).
 * While `drop` says so, whole chunks are dropped unsplit and `drop` is told what they held.
 */
export function captureLines(
  streams: Array<Readable | null | undefined>,
  onLine: (line: string) => void,
  drop?: { now(): boolean; dropped(lines: number, chars: number): void },
): void {
  for (const stream of streams) {
    if (!stream) continue;
    const splitter = new LineSplitter(onLine);
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      if (!drop?.now()) return splitter.push(chunk);
      const skipped = splitter.skip(chunk);
      drop.dropped(skipped.lines, skipped.chars);
    });
    stream.on("end", () => splitter.end());
  }
}

/**
 * A worker's output into its logs (`sink.line`) within its log rate (./log-rate.ts): what is over
 * it is dropped, and `sink.note` gets the marker saying how much (after the flood, from a timer if
 * the worker goes quiet, or at its exit). Its last lines are kept on the worker whatever the rate.
 */
export function captureWorkerOutput(proc: ChildProcess, w: WorkerInfo, rate: LogRate, sink: { line(text: string): void; note(text: string): void }): void {
  const budget = new LogBudget(rate);
  const mark = () => {
    const dropped = budget.marker();
    if (dropped) sink.note(dropped);
  };
  let check: NodeJS.Timeout | undefined;
  const later = () => {
    check = undefined;
    if (budget.recovered()) mark();
    else if (!w.exited) check = setTimeout(later, 1000).unref();
  };
  const onLine = (line: string) => {
    w.lastLines.push(line);
    if (w.lastLines.length > LAST_LINES_KEPT) w.lastLines.shift();
    if (!budget.take(line.length)) {
      check ??= setTimeout(later, 1000).unref();
      return;
    }
    mark();
    sink.line(line);
  };
  // Past the rate, whole chunks are dropped unsplit: a flood costs the reading of the pipe, little more.
  captureLines([proc.stdout, proc.stderr], onLine, { now: () => budget.dropping(), dropped: (lines, chars) => budget.count(lines, chars) });
  proc.once("exit", () => {
    clearTimeout(check);
    mark();
  });
}
