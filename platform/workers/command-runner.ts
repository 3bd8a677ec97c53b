/**
 * The short commands the platform runs as root (`ip netns …`, ./sandbox-egress.ts) are started by a
 * small helper process, not by the platform's own. Node's spawn() forks the calling process, and a
 * fork costs in proportion to the process's memory: 4-8 ms of a ~110 MB platform's event loop per
 * command here (a bare Node process: 1.5 ms; 100 MB more: 9.5 ms), during which no request is
 * served. A worker's start and exit run three or four of them: a dev reload's first answer waited
 * on the old worker's `ip netns del` (issue 42). The helper is a bare Node process running HELPER:
 * one JSON line per command in, one per outcome out. It starts on first use, holds no state, exits
 * with the platform (its stdin closes), and keeps the platform alive only while a command runs.
 * Where it cannot start, or dies, commands are spawned here as before.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Socket } from "node:net";
import { createInterface } from "node:readline";

/** The helper: runs each command line it reads (no shell), answers its exit code and stderr. */
const HELPER = `
const { spawn } = require("node:child_process");
const lines = require("node:readline").createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const { id, command, args, input } = JSON.parse(line);
  let stderr = "";
  let answered = false;
  const answer = (code, error) => {
    if (answered) return;
    answered = true;
    process.stdout.write(JSON.stringify({ id, code, stderr: error ?? stderr }) + "\\n");
  };
  let proc;
  try {
    proc = spawn(command, args, { stdio: [input === undefined ? "ignore" : "pipe", "ignore", "pipe"] });
  } catch (error) {
    return answer(null, String(error.message));
  }
  proc.stderr.on("data", (d) => (stderr += d));
  proc.on("error", (error) => answer(null, error.message));
  proc.on("close", (code) => answer(code));
  if (input !== undefined) proc.stdin.end(input);
});
lines.on("close", () => process.exit(0));
`;

interface Outcome {
  code: number | null;
  stderr: string;
}

interface Pending {
  resolve(outcome: Outcome): void;
  command: string;
  args: string[];
  input?: string;
}

/** Spawns `command` in this process: the fallback, and what the helper itself does. */
function spawnHere(command: string, args: string[], input?: string): Promise<Outcome> {
  return new Promise((resolve) => {
    let stderr = "";
    let proc: ChildProcess;
    try {
      proc = spawn(command, args, { stdio: [input === undefined ? "ignore" : "pipe", "ignore", "pipe"] });
    } catch (error) {
      resolve({ code: null, stderr: (error as Error).message });
      return;
    }
    proc.stderr!.on("data", (d: Buffer) => (stderr += d));
    proc.on("error", (error) => resolve({ code: null, stderr: error.message }));
    proc.on("close", (code) => resolve({ code, stderr }));
    if (input !== undefined) proc.stdin!.end(input);
  });
}

class CommandRunner {
  private helper: ChildProcess | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  /** The helper could not start or died: commands are spawned here from then on. */
  private broken = false;

  run(command: string, args: string[], input?: string): Promise<Outcome> {
    const helper = this.broken ? undefined : (this.helper ?? this.start());
    if (!helper) return spawnHere(command, args, input);
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, { resolve, command, args, input });
      this.hold(true);
      helper.stdin!.write(`${JSON.stringify({ id, command, args, input })}\n`);
    });
  }

  private start(): ChildProcess | undefined {
    let helper: ChildProcess;
    try {
      // the commands find what the platform's PATH finds; the platform's node flags are not the helper's
      const { NODE_OPTIONS: _, ...env } = process.env;
      helper = spawn(process.execPath, ["-e", HELPER], { stdio: ["pipe", "pipe", "ignore"], env });
    } catch {
      this.broken = true;
      return undefined;
    }
    this.helper = helper;
    helper.stdin!.on("error", () => undefined); // gone: its exit hands its commands back
    createInterface({ input: helper.stdout! }).on("line", (line) => {
      const { id, code, stderr } = JSON.parse(line) as Outcome & { id: number };
      const waiting = this.pending.get(id);
      this.pending.delete(id);
      if (this.pending.size === 0) this.hold(false);
      waiting?.resolve({ code, stderr });
    });
    helper.on("error", () => this.lost(helper));
    helper.on("exit", () => this.lost(helper));
    this.hold(false);
    return helper;
  }

  /** The helper keeps the platform's process alive only while a command of its runs. */
  private hold(busy: boolean): void {
    const helper = this.helper;
    if (!helper) return;
    for (const stream of [helper.stdin, helper.stdout] as unknown as Socket[]) {
      if (busy) stream.ref();
      else stream.unref();
    }
    if (busy) helper.ref();
    else helper.unref();
  }

  /** The helper went: its commands still waiting run here, and so does every later one. */
  private lost(helper: ChildProcess): void {
    if (this.helper !== helper) return;
    this.helper = undefined;
    this.broken = true;
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const { resolve, command, args, input } of waiting) void spawnHere(command, args, input).then(resolve);
  }
}

const runner = new CommandRunner();

/** Runs `command` to its end through the helper; rejects with its stderr when it fails. */
export async function runCommand(command: string, args: string[], input?: string): Promise<void> {
  const { code, stderr } = await runner.run(command, args, input);
  if (code !== 0) throw new Error(`${command} ${args.join(" ")} exited ${code}: ${stderr.trim()}`);
}
