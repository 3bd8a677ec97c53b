/**
 * `svc shell` start-up benchmark (not a test: prints figures, asserts nothing). Run:
 * npx tsx bench/shell/run.ts [--rounds 7]
 *
 * The built package (`npm pack`, bench/cli/_built-package.ts) runs an embedded platform in a scratch
 * state folder, and fixtures/shell-app (a network volume, a secret) is deployed to it. The CLI finds
 * that platform as a user's does: no PLATFORM_API_URL, SVC_PLATFORM_DIR naming the state folder. One
 * shell runs first (the build unpacked, the image's interpreter probed: a warm image). Then medians
 * (and minimum) over --rounds of whole-process wall times of:
 *   node -e 0                  the floor: Node's own start-up
 *   svc --version              the CLI's own start
 *   svc shell probe -c true    goal: ≤ 2 s from the built package (issue 37)
 * from the built package ("built", as users run it) and this checkout's bin ("sources", TypeScript
 * through tsx), and the shell route alone: core's runShell in this process, from its request to the
 * shell's exit (the platform's side: the sandbox made, `true` run, the sandbox gone).
 * Options: --rounds <n> (7), --bin <path/to/svc.mjs> (a package already built, or an older one's:
 * it runs the platform too), --label <name> (the --bin's row, default "built").
 */
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { PassThrough, Readable } from "node:stream";
import { parseArgs } from "node:util";
import { createPlatformClient, runShell } from "../../core/client/index.ts";
import { builtPackage } from "../cli/_built-package.ts";
import { startBuiltPlatform } from "../platform/_platform.ts";

const REPO = resolve(import.meta.dirname, "../..");
const { values: flags } = parseArgs({
  options: { rounds: { type: "string", default: "7" }, bin: { type: "string" }, label: { type: "string", default: "built" } },
});
const rounds = Number(flags.rounds);
const tmp = mkdtempSync(join(tmpdir(), "svc-bench-shell-"));
const stateDir = join(tmp, "platform");
const app = join(tmp, "app");
const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1", SVC_PLATFORM_DIR: stateDir };
delete env.PLATFORM_API_URL;
delete env.PLATFORM_API_KEY;

/** Wall milliseconds of one whole process, which must succeed. */
function wall(args: string[]): number {
  const started = performance.now();
  const result = spawnSync(process.execPath, args, { cwd: app, env, stdio: ["ignore", "ignore", "pipe"] });
  const ms = performance.now() - started;
  if (result.status !== 0) throw new Error(`node ${args.join(" ")} failed (${result.status}): ${result.stderr}`);
  return ms;
}

async function measure(run: () => number | Promise<number>): Promise<{ median: number; min: number }> {
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) times.push(await run());
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)]!, min: times[0]! };
}

const bin = flags.bin ? resolve(flags.bin) : builtPackage(tmp);
const platform = await startBuiltPlatform(tmp, { env, bin, stateDir });
try {
  const client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
  await client.createVolume({ name: "shell-data", size: 1 });
  await client.createSecret("shell_token", "a secret for the bench");
  cpSync(join(REPO, "fixtures", "shell-app"), app, { recursive: true });
  execFileSync(process.execPath, [bin, "deploy", "--quiet"], { cwd: app, env, stdio: ["ignore", "ignore", "inherit"] });
  const endpoint = (await client.getApp("shell-app"))!.environments[0]!.endpoints.find((e) => e.name === "probe")!;
  wall([bin, "shell", "probe", "-c", "true"]); // the warm-up: the build unpacked, the interpreter probed

  /** The platform's side alone: the request, the sandbox, `true`, the exit frame. */
  const route = async () => {
    const started = performance.now();
    const sink = new PassThrough().resume();
    const code = await runShell(platform, { endpointId: endpoint.id, command: "true", stdin: Readable.from([]), stdout: sink, stderr: sink });
    if (code !== 0) throw new Error(`the shell exited ${code}`);
    return performance.now() - started;
  };
  const node = await measure(() => wall(["-e", "0"]));
  const rows: string[][] = [["node -e 0", "", node.median.toFixed(0), node.min.toFixed(0)]];
  for (const [label, svc] of [
    [flags.label, bin],
    ["sources", join(REPO, "bin", "svc.mjs")],
  ] as const) {
    for (const [name, args] of [
      ["svc --version", ["--version"]],
      ["svc shell probe -c true", ["shell", "probe", "-c", "true"]],
    ] as const) {
      const { median, min } = await measure(() => wall([svc, ...args]));
      rows.push([name, label, median.toFixed(0), min.toFixed(0)]);
    }
  }
  const alone = await measure(route);
  rows.push(["the shell route alone", "", alone.median.toFixed(0), alone.min.toFixed(0)]);
  const header = ["command", "svc", "median ms", "min ms"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ");
  console.log(`svc shell start, whole-process wall time, ${rounds} rounds, node ${process.version}, load average ${loadavg()[0]!.toFixed(1)}`);
  console.log([line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n"));
} finally {
  platform.child.kill("SIGTERM");
  await new Promise((resolve) => platform.child.once("exit", resolve));
  rmSync(tmp, { recursive: true, force: true });
}
