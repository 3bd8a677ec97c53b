/**
 * Transfer progress: on a terminal one redrawn bar with bytes, rate and ETA; elsewhere (CI, pipes)
 * a plain line per file and every 10 % of the bytes, so logs stay short and readable.
 */
import { formatBytes } from "../../core/errors.ts";

export interface Progress {
  /** Bytes that count as done without being sent (resumed parts, unchanged files). */
  skip(bytes: number): void;
  sent(bytes: number): void;
  line(text: string): void;
  done(): void;
}

const clock = (s: number) => (Number.isFinite(s) ? `${Math.floor(s / 60)}:${String(Math.round(s % 60)).padStart(2, "0")}` : "--:--");

export function createProgress(
  total: number,
  label: string,
  stream: Pick<NodeJS.WriteStream, "write"> = process.stderr,
  tty = Boolean(process.stderr.isTTY) && !process.env.CI,
): Progress {
  const started = Date.now();
  let done = 0;
  let sentBytes = 0;
  let lastDecile = 0;
  let lastDraw = 0;
  const status = () => {
    const seconds = (Date.now() - started) / 1000;
    const rate = seconds > 0 ? sentBytes / seconds : 0;
    const eta = done >= total ? 0 : rate > 0 ? (total - done) / rate : Number.POSITIVE_INFINITY;
    const pct = total > 0 ? Math.floor((done / total) * 100) : 100;
    return { pct, text: `${formatBytes(done)}/${formatBytes(total)} ${formatBytes(rate)}/s ETA ${clock(eta)}` };
  };
  const draw = (force = false) => {
    const now = Date.now();
    if (tty) {
      if (!force && now - lastDraw < 100) return;
      lastDraw = now;
      const { pct, text } = status();
      const width = 24;
      const filled = Math.round((pct / 100) * width);
      stream.write(`\r\x1b[2K${label} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${pct}% ${text}`);
    } else {
      const { pct, text } = status();
      const decile = Math.floor(pct / 10);
      if (decile > lastDecile || force) {
        lastDecile = decile;
        stream.write(`${label} ${pct}% ${text}\n`);
      }
    }
  };
  return {
    skip(bytes) {
      done += bytes;
      draw();
    },
    sent(bytes) {
      done += bytes;
      sentBytes += bytes;
      draw();
    },
    line(text) {
      if (tty) stream.write("\r\x1b[2K");
      stream.write(`${text}\n`);
      if (tty) draw(true);
    },
    done() {
      if (tty) {
        draw(true);
        stream.write("\n");
      } else if (lastDecile < 10) draw(true);
    },
  };
}
