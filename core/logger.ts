/**
 * Progress output. Human lines go to stderr so that `--json` output on stdout stays parseable.
 */
import { createProgress, silentProgress, type Progress } from "./progress.ts";
export type LogLevel = "silent" | "error" | "warn" | "info" | "debug";

export interface StageTiming {
  stage: string;
  ms: number;
  summary?: string;
}

export interface Logger {
  level: LogLevel;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  debug(message: string): void;
  /** Called by the pipeline when a stage finishes. */
  stage(timing: StageTiming): void;
  /** Progress of a step that can take seconds (core/progress.ts); silent below `info`. */
  progress(label: string, totalBytes: number): Progress;
  readonly timings: StageTiming[];
  readonly warnings: string[];
}

const order: LogLevel[] = ["silent", "error", "warn", "info", "debug"];
const useColor = process.stderr.isTTY && !process.env.NO_COLOR;
export const paint = (code: number, text: string) => (useColor ? `\x1b[${code}m${text}\x1b[0m` : text);

export interface LoggerOutput {
  /** Redrawn progress bars (default: stderr is a terminal, when the lines go to stderr). */
  tty?: boolean;
  /** Raw text for progress (default: stderr when the lines go there, else each text as a line). */
  raw?: (text: string) => void;
}

const toStderr = (line: string) => process.stderr.write(`${line}\n`);

export function createLogger(level: LogLevel = "info", write: (line: string) => void = toStderr, output: LoggerOutput = {}): Logger {
  const ownStderr = write === toStderr;
  const tty = output.tty ?? (ownStderr && Boolean(process.stderr.isTTY) && !process.env.CI);
  const raw = output.raw ?? (ownStderr ? (text: string) => process.stderr.write(text) : (text: string) => write(text.replace(/\n$/, "")));
  const enabled = (at: LogLevel) => order.indexOf(at) <= order.indexOf(logger.level);
  // a line printed while a bar is drawn clears the bar first; the bar redraws on its next update
  let bars = 0;
  const line = (text: string) => {
    if (bars > 0 && tty) raw("\r\x1b[2K");
    write(text);
  };
  const progress = (label: string, totalBytes: number): Progress => {
    if (!enabled("info")) return silentProgress;
    const bar = createProgress(label, totalBytes, { tty, write: raw });
    bars++;
    let ended = false;
    return {
      add: bar.add,
      skip: bar.skip,
      line: bar.line,
      note: bar.note,
      end() {
        if (ended) return;
        ended = true;
        bars--;
        bar.end();
      },
    };
  };
  const logger: Logger = {
    level,
    timings: [],
    warnings: [],
    info: (message) => enabled("info") && line(message),
    warn(message) {
      logger.warnings.push(message);
      if (enabled("warn")) line(`${paint(33, "warning")} ${message}`);
    },
    error: (message) => enabled("error") && line(`${paint(31, "error")} ${message}`),
    debug: (message) => enabled("debug") && line(paint(90, message)),
    progress,
    stage(timing) {
      logger.timings.push(timing);
      if (!enabled("info")) return;
      const summary = timing.summary ? `  ${timing.summary}` : "";
      line(`${paint(32, "✓")} ${timing.stage.padEnd(20)}${paint(90, `${formatMs(timing.ms).padStart(8)}`)}${summary}`);
    },
  };
  return logger;
}

export function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}
