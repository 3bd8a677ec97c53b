/**
 * Progress of a step that can take seconds (hashing and packing, pip, upload, a volume transfer).
 * On a terminal: one redrawn line with a bar, bytes done of the total, rate and ETA, cleared when
 * the step ends (its stage line follows). Elsewhere (CI, pipes, files): one plain line when the step
 * starts, the step's own lines (`line`: a file transferred), and no control codes, so logs stay
 * short and readable.
 */
import { formatBytes } from "./errors.ts";

export interface Progress {
  /** `bytes` more are done. */
  add(bytes: number): void;
  /** `bytes` count as done without being worked on (a resumed part, an unchanged file): not in the rate. */
  skip(bytes: number): void;
  /** A line of the step's own (a file done), printed above the bar. */
  line(text: string): void;
  /** What the step is at now, for a step without byte counts (pip's latest line); terminal only. */
  note(text: string): void;
  /** The step ended: the bar's line is cleared. */
  end(): void;
}

export interface ProgressOutput {
  /** Redraws are allowed (a terminal). */
  tty: boolean;
  /** Raw text, no newline added. */
  write(text: string): void;
}

const REDRAW_MS = 100;
const BAR_WIDTH = 24;
const clock = (s: number) => (Number.isFinite(s) ? `${Math.floor(s / 60)}:${String(Math.round(s % 60)).padStart(2, "0")}` : "--:--");

export const silentProgress: Progress = { add() {}, skip() {}, line() {}, note() {}, end() {} };

/** `total` 0: a step of unknown size (notes only). */
export function createProgress(label: string, total: number, out: ProgressOutput, now: () => number = () => performance.now()): Progress {
  if (!out.tty) {
    out.write(`${label}${total > 0 ? ` (${formatBytes(total)})` : ""}…\n`);
    return { ...silentProgress, line: (text) => out.write(`${text}\n`) };
  }
  const started = now();
  let done = 0;
  let skipped = 0;
  let note = "";
  let lastDraw = -Infinity;
  let drawn = false;
  const draw = (force = false) => {
    const at = now();
    if (!force && at - lastDraw < REDRAW_MS) return;
    lastDraw = at;
    drawn = true;
    const seconds = (at - started) / 1000;
    let text = `${label}`;
    if (total > 0) {
      const share = Math.min(1, done / total);
      const rate = seconds > 0 ? (done - skipped) / seconds : 0;
      // done can pass an estimated total (a tar stream's headers and padding): never a negative ETA
      const eta = rate > 0 ? Math.max(0, total - done) / rate : Number.POSITIVE_INFINITY;
      const filled = Math.round(share * BAR_WIDTH);
      text += ` [${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}] ${Math.floor(share * 100)}% ${formatBytes(done)}/${formatBytes(total)} ${formatBytes(rate)}/s ETA ${clock(eta)}`;
    } else text += ` ${clock(seconds)}`;
    if (note) text += `  ${note}`;
    out.write(`\r\x1b[2K${text.slice(0, 160)}`);
  };
  draw(true);
  return {
    add(bytes) {
      done += bytes;
      draw();
    },
    skip(bytes) {
      done += bytes;
      skipped += bytes;
      draw();
    },
    line(text) {
      out.write(`\r\x1b[2K${text}\n`);
      draw(true);
    },
    note(text) {
      note = text.trim();
      draw();
    },
    end() {
      if (drawn) out.write("\r\x1b[2K");
    },
  };
}
