/**
 * CLI start-up benchmark (not a test: prints figures, asserts nothing). Run: npm run bench:cli
 *
 * Whole-process wall times, medians (and minimum) over --rounds runs, of:
 *   node -e 0                  the floor: Node's own start-up
 *   svc --version / --help     goal: ≤ 3× node -e 0 from the built package
 *   svc build, nothing changed on the `svc init` app (its dependency already installed and cached):
 *                              goal ≤ 0.35 s from the built package
 * for two svc's: "built" is this checkout packed with `npm pack` (dist/, plain node, as users run
 * it; node_modules linked from the checkout) and "sources" is this checkout's bin (TypeScript through
 * tsx). --bin <path/to/svc.mjs> measures another svc instead (an older checkout, say: "before").
 * Options: --rounds <n> (10), --bin <file>, --label <name>.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { builtPackage } from "./_built-package.ts";

const REPO = resolve(import.meta.dirname, "../..");
const { values: flags } = parseArgs({ options: { rounds: { type: "string", default: "10" }, bin: { type: "string" }, label: { type: "string" } } });
const rounds = Number(flags.rounds);
const tmp = mkdtempSync(join(tmpdir(), "svc-bench-cli-"));
const env = { ...process.env, NO_COLOR: "1" };

/** Wall milliseconds of one whole process, which must succeed. */
function wall(args: string[], cwd: string): number {
  const started = performance.now();
  const result = spawnSync(process.execPath, args, { cwd, env, stdio: ["ignore", "ignore", "pipe"] });
  const ms = performance.now() - started;
  if (result.status !== 0) throw new Error(`node ${args.join(" ")} failed: ${result.stderr}`);
  return ms;
}

function measure(args: string[], cwd: string): { median: number; min: number } {
  const times = Array.from({ length: rounds }, () => wall(args, cwd)).sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)]!, min: times[0]! };
}

try {
  const bins: Array<[string, string]> = flags.bin
    ? [[flags.label ?? "given", resolve(flags.bin)]]
    : [
        ["built", builtPackage(tmp)],
        ["sources", join(REPO, "bin", "svc.mjs")],
      ];
  const app = join(tmp, "app");
  mkdirSync(app);
  execFileSync(process.execPath, [bins[0]![1], "init", "--root", app], { env, stdio: "ignore" });
  // the first build installs the app's dependency into .svc/cache; the measured ones change nothing
  for (const [, bin] of bins) execFileSync(process.execPath, [bin, "build", "--quiet"], { cwd: app, env, stdio: "ignore" });

  const node = measure(["-e", "0"], tmp);
  const rows: string[][] = [["node -e 0", "", node.median.toFixed(0), node.min.toFixed(0), "1.0×"]];
  for (const [label, bin] of bins) {
    for (const [name, args] of [
      ["svc --version", ["--version"]],
      ["svc --help", ["--help"]],
      ["svc build (nothing changed)", ["build", "--quiet"]],
    ] as const) {
      const { median, min } = measure([bin, ...args], app);
      rows.push([name, label, median.toFixed(0), min.toFixed(0), `${(median / node.median).toFixed(1)}×`]);
    }
  }
  const header = ["command", "svc", "median ms", "min ms", "÷ node -e 0"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ");
  console.log(`whole-process wall time, ${rounds} rounds, node ${process.version}`);
  console.log([line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n"));
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
