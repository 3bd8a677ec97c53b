/**
 * Progress output. Human lines go to stderr so that `--json` output on stdout stays parseable.
 */
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
  readonly timings: StageTiming[];
  readonly warnings: string[];
}

const order: LogLevel[] = ["silent", "error", "warn", "info", "debug"];
const useColor = process.stderr.isTTY && !process.env.NO_COLOR;
export const paint = (code: number, text: string) => (useColor ? `\x1b[${code}m${text}\x1b[0m` : text);

export function createLogger(level: LogLevel = "info", write: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): Logger {
  const enabled = (at: LogLevel) => order.indexOf(at) <= order.indexOf(logger.level);
  const logger: Logger = {
    level,
    timings: [],
    warnings: [],
    info: (message) => enabled("info") && write(message),
    warn(message) {
      logger.warnings.push(message);
      if (enabled("warn")) write(`${paint(33, "warning")} ${message}`);
    },
    error: (message) => enabled("error") && write(`${paint(31, "error")} ${message}`),
    debug: (message) => enabled("debug") && write(paint(90, message)),
    stage(timing) {
      logger.timings.push(timing);
      if (!enabled("info")) return;
      const summary = timing.summary ? `  ${timing.summary}` : "";
      write(`${paint(32, "✓")} ${timing.stage.padEnd(20)}${paint(90, `${formatMs(timing.ms).padStart(8)}`)}${summary}`);
    },
  };
  return logger;
}

export function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}
