/**
 * Progress of the steps that take seconds (core/progress.ts), through the real CLI: `svc build` of
 * an app with a 70 MB data file, once under a pseudo-terminal (util-linux `script`) and once with
 * stderr a pipe. On the terminal: redrawn bars with bytes, rate and ETA for hashing and packing; in
 * the pipe: one plain line per step and no control codes at all (NO_COLOR too, as CI sets it).
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createProgress } from "../../core/progress.ts";
import { copyFixture } from "../plugins/_helpers.ts";

const BIN = new URL("../../bin/svc.mjs", import.meta.url).pathname;
const scriptAvailable = await new Promise<boolean>((resolve) => execFile("script", ["--version"], (error) => resolve(!error)));

const run = (file: string, args: string[], env: NodeJS.ProcessEnv) =>
  new Promise<{ code: number; out: string }>((resolve) =>
    execFile(file, args, { env: { ...process.env, ...env }, timeout: 180_000, maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    ),
  );

function bigApp(): string {
  const root = copyFixture("deploy-app");
  mkdirSync(join(root, "data"));
  writeFileSync(join(root, "data", "big.bin"), randomBytes(70 * 1024 * 1024));
  return root;
}

describe("progress", () => {
  it("a pipe gets one plain line per long step and no control codes", { timeout: 180_000 }, async () => {
    const root = bigApp();
    const { code, out } = await run(process.execPath, [BIN, "build", "--no-deps", "--root", root], { NO_COLOR: "1", CI: "1" });
    expect(code, out).toBe(0);
    expect(out).not.toMatch(/[\r\x1b]/);
    const lines = out.split("\n");
    expect(lines.filter((l) => l.startsWith("manifest: hashing the app's files"))).toEqual(["manifest: hashing the app's files (73.4 MB)…"]);
    expect(lines.filter((l) => l.startsWith("pack: writing .svc/artifact.tar.gz"))).toHaveLength(1);
    // the summary accounts for the whole wait: stages, config and clean-up, start-up
    expect(out).toMatch(/built in \S+ \S+ \(stages \S+ \S+, config and clean-up \S+ \S+; start-up before it \S+ \S+\)/);
    rmSync(join(root, ".."), { recursive: true, force: true });
  });

  it.runIf(scriptAvailable)("a terminal gets redrawn bars with bytes, rate and ETA, cleared before each stage line", { timeout: 180_000 }, async () => {
    const root = bigApp();
    const command = [process.execPath, BIN, "build", "--no-deps", "--root", root].map((a) => `'${a}'`).join(" ");
    const { code, out } = await run("script", ["-qec", command, "/dev/null"], { CI: "", NO_COLOR: "" });
    expect(code, out).toBe(0);
    const bars = out.split("\r\x1b[2K").filter(Boolean);
    const packing = bars.filter((b) => b.startsWith("pack: writing .svc/artifact.tar.gz ["));
    expect(packing.length).toBeGreaterThan(0);
    expect(packing.at(-1)).toMatch(/\] \d+% [\d.]+ [KMG]?B\/7\d\.\d MB [\d.]+ [KMG]?B\/s ETA (\d+:\d\d|--:--)/);
    expect(bars.some((b) => b.startsWith("manifest: hashing the app's files ["))).toBe(true);
    // the bar's line is cleared, then the stage line follows on it
    expect(out).toMatch(/\r\x1b\[2K(\x1b\[\d+m)?✓(\x1b\[0m)? pack /);
    rmSync(join(root, ".."), { recursive: true, force: true });
  });

  it("draws at most every 100 ms and says ETA from the rate so far", () => {
    let now = 0;
    const written: string[] = [];
    const bar = createProgress("step", 1000, { tty: true, write: (t) => written.push(t) }, () => now);
    now = 50;
    bar.add(100); // within 100 ms of the first draw: not drawn
    now = 1000;
    bar.add(400); // 500 of 1000 in 1 s: 500 B/s, 1 s left
    bar.end();
    expect(written).toHaveLength(3);
    expect(written[1]).toBe("\r\x1b[2Kstep [############------------] 50% 500 B/1.0 KB 500 B/s ETA 0:01");
    expect(written[2]).toBe("\r\x1b[2K");
    const plain: string[] = [];
    const quiet = createProgress("step", 1000, { tty: false, write: (t) => plain.push(t) });
    quiet.add(1000);
    quiet.end();
    expect(plain).toEqual(["step (1.0 KB)…\n"]);
  });

  it("a transfer: bytes already there count as done but not in the rate; its own lines go above the bar", () => {
    let now = 0;
    const written: string[] = [];
    const bar = createProgress("upload w", 100_000_000, { tty: true, write: (t) => written.push(t) }, () => now);
    now = 1000;
    bar.skip(50_000_000); // resumed parts: done at once, not sent
    bar.line("resumed a.bin");
    now = 2000;
    bar.add(25_000_000); // 25 MB sent in 2 s: 12.5 MB/s, 25 MB left
    bar.end();
    expect(written).toContain("\r\x1b[2Kresumed a.bin\n");
    expect(written.at(-2)).toBe("\r\x1b[2Kupload w [##################------] 75% 75.0 MB/100.0 MB 12.5 MB/s ETA 0:02");
    const plain: string[] = [];
    const quiet = createProgress("download w", 1000, { tty: false, write: (t) => plain.push(t) });
    quiet.skip(500);
    quiet.add(500);
    quiet.line("downloaded a.bin");
    quiet.end();
    expect(plain).toEqual(["download w (1.0 KB)…\n", "downloaded a.bin\n"]);
  });
});
