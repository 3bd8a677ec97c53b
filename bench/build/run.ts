/**
 * Build benchmark (not a test: prints figures, asserts nothing). Run: npx tsx bench/build/run.ts
 *
 *   cold build      svc init app + two small PyPI dependencies, empty .svc/ and no pip download cache
 *   nothing changed the same build again (goal ≤ 0.3 s)
 *   one file edited a rebuild after changing one Python file
 *   1 GB pack       packing a 1 GB tree of incompressible files (goal: peak RSS ≤ 250 MB)
 *
 * Each job runs in a child process; "pipeline" is the in-process pipeline time, "process" adds Node
 * start-up, tsx and module loading (what a user waits for on `svc build`).
 * Options: --size-mb <n> (default 1024) for the pack tree, --skip-pack, --skip-build.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, createWriteStream, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { once } from "node:events";
import { promisify } from "node:util";
import { initProject } from "../../cli/commands/init.ts";

const exec = promisify(execFile);
const CHILD = resolve(import.meta.dirname, "_child.ts");
const TSX = resolve(import.meta.dirname, "../../node_modules/tsx/dist/cli.mjs");
const args = process.argv.slice(2);
const option = (name: string) => {
  const index = args.indexOf(name);
  return index >= 0 ? args[index + 1] : undefined;
};
const sizeMB = Number(option("--size-mb") ?? 1024);

interface Row {
  case: string;
  pipeline: string;
  process: string;
  peakRss: string;
  goal: string;
  note: string;
}
const rows: Row[] = [];

async function child(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<{ wallMs: number; result: Record<string, unknown> }> {
  const started = performance.now();
  const { stdout } = await exec(process.execPath, [TSX, CHILD, ...argv], { env: { ...process.env, ...env }, maxBuffer: 16 << 20 });
  const wallMs = performance.now() - started;
  const last = stdout.trim().split("\n").pop()!;
  return { wallMs, result: JSON.parse(last) };
}

const s = (ms: number) => `${(ms / 1000).toFixed(3)} s`;
const mb = (value: unknown) => `${Number(value).toFixed(0)} MB`;

async function benchBuilds(): Promise<void> {
  const dir = join(mkdtempSync(join(tmpdir(), "svc-bench-")), "bench-app");
  await initProject(dir);
  appendFileSync(join(dir, "requirements.txt"), "six==1.17.0\n");

  const cold = await child(["build", dir], { PIP_NO_CACHE_DIR: "1" });
  rows.push({ case: "cold build (2 PyPI deps)", pipeline: s(cold.result.ms as number), process: s(cold.wallMs), peakRss: mb(cold.result.maxRssMB), goal: "", note: `pip ran: ${cold.result.pipRan}` });

  const warm = await child(["build", dir]);
  rows.push({
    case: "rebuild, nothing changed",
    pipeline: s(warm.result.ms as number),
    process: s(warm.wallMs),
    peakRss: mb(warm.result.maxRssMB),
    goal: `≤ 0.300 s: ${(warm.result.ms as number) <= 300 ? "met" : "MISSED"} (pipeline)`,
    note: `pip ran: ${warm.result.pipRan}, artifact reused: ${warm.result.reusedArtifact}`,
  });

  appendFileSync(join(dir, "workers", "cpu_worker.py"), "\n# touched by the benchmark\n");
  const touched = await child(["build", dir]);
  rows.push({ case: "rebuild, one .py edited", pipeline: s(touched.result.ms as number), process: s(touched.wallMs), peakRss: mb(touched.result.maxRssMB), goal: "", note: `artifact reused: ${touched.result.reusedArtifact}` });
  console.error(`stage times of the last rebuild (ms): ${JSON.stringify(touched.result.stages)}`);
  rmSync(join(dir, ".."), { recursive: true, force: true });
}

async function benchPack(): Promise<void> {
  const dir = join(mkdtempSync(join(tmpdir(), "svc-bench-pack-")), "big-app");
  const fileMB = 16;
  const files = Math.ceil(sizeMB / fileMB);
  console.error(`generating ${files} × ${fileMB} MB of random data in ${dir} …`);
  for (let i = 0; i < files; i++) {
    const sub = join(dir, `blobs${i % 8}`);
    mkdirSync(sub, { recursive: true });
    const out = createWriteStream(join(sub, `blob-${String(i).padStart(4, "0")}.bin`));
    for (let chunk = 0; chunk < fileMB; chunk++) if (!out.write(randomBytes(1 << 20))) await once(out, "drain");
    out.end();
    await once(out, "finish");
  }
  const pack = await child(["pack", dir]);
  const rss = pack.result.maxRssMB as number;
  rows.push({
    case: `pack ${sizeMB} MB incompressible`,
    pipeline: s(pack.result.ms as number),
    process: s(pack.wallMs),
    peakRss: mb(rss),
    goal: `≤ 250 MB: ${rss <= 250 ? "met" : "MISSED"}`,
    note: `${((sizeMB / (pack.result.ms as number)) * 1000).toFixed(0)} MB/s, artifact ${(Number(pack.result.bytes) / 1e6).toFixed(0)} MB`,
  });
  rmSync(join(dir, ".."), { recursive: true, force: true });
}

if (!args.includes("--skip-build")) await benchBuilds();
if (!args.includes("--skip-pack")) await benchPack();

const columns: Array<keyof Row> = ["case", "pipeline", "process", "peakRss", "goal", "note"];
const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => r[c].length)));
const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i]!)).join("  ");
console.log(`svc build benchmark — node ${process.version}, ${process.platform}/${process.arch}`);
console.log(line(columns));
console.log(line(widths.map((w) => "-".repeat(w))));
for (const row of rows) console.log(line(columns.map((c) => row[c])));
