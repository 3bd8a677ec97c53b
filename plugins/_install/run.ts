/**
 * Runs an installer (pip or uv) to its end for svc:pip-install: its latest line beside a clock on a
 * terminal, every line at debug level, and its own words kept for an error.
 */
import { spawn } from "node:child_process";
import type { BuildContext } from "../../core/types.ts";

export interface InstallerRun {
  ok: boolean;
  /** The tail of stdout + stderr. */
  output: string;
}

export function runInstaller(command: string, args: string[], ctx: BuildContext, label: string, env: NodeJS.ProcessEnv = {}): Promise<InstallerRun> {
  const name = command.split("/").pop()!;
  const progress = ctx.logger.progress(label, 0);
  return new Promise<InstallerRun>((resolvePromise, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
    let output = "";
    const collect = (chunk: Buffer, shown: boolean) => {
      const text = chunk.toString();
      output += text;
      // keep the tail only: installers can be chatty
      if (output.length > 200_000) output = output.slice(-100_000);
      if (!shown) return;
      for (const line of text.split("\n")) {
        if (!line.trim()) continue;
        ctx.logger.debug(`${name}: ${line}`);
        progress.note(line);
      }
    };
    child.stdout.on("data", (chunk: Buffer) => collect(chunk, true));
    // uv reports its progress on stderr; pip's stderr is warnings and errors
    child.stderr.on("data", (chunk: Buffer) => collect(chunk, name.startsWith("uv")));
    child.on("error", reject);
    child.on("close", (code) => resolvePromise({ ok: code === 0, output }));
  }).finally(() => progress.end());
}

/** The installer's own words, verbatim, without the progress noise before the first error. */
export function errorText(output: string): string {
  const lines = output.trimEnd().split("\n");
  const first = lines.findIndex((line) => /^ERROR:|error:|^\s*× /i.test(line));
  return (first >= 0 ? lines.slice(Math.max(0, first - 2)) : lines.slice(-30)).join("\n");
}

/** uv's error line and its first cause, on one line: "error: Request failed after 3 retries; cause: Failed to fetch: http://…". */
export function uvReason(output: string): string {
  const lines = output.trimEnd().split("\n");
  const at = lines.findIndex((line) => /^\s*(error|×)/i.test(line));
  if (at < 0) return lines.at(-1)?.trim() || "it failed";
  const cause = lines.slice(at + 1).find((line) => /^\s*(caused by|cause):/i.test(line));
  return [lines[at]!, cause]
    .filter((line) => line !== undefined)
    .map((line) => line.trim())
    .join("; ");
}
