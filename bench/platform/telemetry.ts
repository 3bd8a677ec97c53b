/**
 * What metrics and traces cost the hot path (docs/observability.md, "Cost"; prints figures, asserts
 * nothing). Run: npx tsx bench/platform/telemetry.ts [--seconds 5] [--rounds 4] [--clients 32] [--warmup 3000]
 *
 * Three built platforms side by side (bench/platform/_platform.ts, the package as users run it),
 * each with the same no-op endpoint and 2 warm workers:
 *   off       SVC_METRICS=0 and no OTLP: no collection point is called
 *   metrics   the default: /metrics on (scraped once a second meanwhile, as Prometheus would)
 *   tracing   metrics on, and OTEL_EXPORTER_OTLP_ENDPOINT pointing at a running Jaeger (one trace
 *             per job, exported in batches); skipped when no Jaeger binary is found
 * After --warmup sequential runsyncs each (Node's JIT settles), --rounds rounds of --clients
 * concurrent runsync loops for --seconds on each platform in turn, the order rotating, so a noisy
 * second of the machine lands on every side alike. Goals: metrics / off ≥ 0.97, tracing / off ≥ 0.90.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { Pool } from "undici";
import { builtPackage } from "../cli/_built-package.ts";
import { buildFixtureArtifact, deploy, tempDir, waitFor } from "../../test/platform/_support.ts";
import { JAEGER } from "../../test/_support/tools.ts";
import { startJaeger, type RunningJaeger } from "../../test/_support/jaeger.ts";
import { startBuiltPlatform, type BenchPlatform } from "./_platform.ts";

const args = process.argv.slice(2);
const opt = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const SECONDS = opt("--seconds", 5);
const ROUNDS = opt("--rounds", 4);
const CLIENTS = opt("--clients", 32);
const WARMUP = opt("--warmup", 3000);
const BODY = '{"input":{"op":"noop"}}';

interface Side {
  name: string;
  platform: BenchPlatform;
  path: string;
  headers: Record<string, string>;
  rps: number[];
}

/** `clients` runsync loops for `seconds` (after `warmup` sequential ones when given): completed requests/s. */
async function load(side: Side, clients: number, seconds: number): Promise<number> {
  const pool = new Pool(side.platform.url, { connections: clients, pipelining: 1 });
  let done = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  try {
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (performance.now() < end) {
          const res = await pool.request({ method: "POST", path: side.path, headers: side.headers, body: BODY });
          const body = (await res.body.json()) as { status: string };
          if (body.status !== "COMPLETED") throw new Error(`${side.name}: ${JSON.stringify(body)}`);
          done++;
        }
      }),
    );
  } finally {
    await pool.close();
  }
  return done / ((performance.now() - t0) / 1000);
}

async function warm(side: Side, n: number): Promise<void> {
  const pool = new Pool(side.platform.url, { connections: 1 });
  try {
    for (let i = 0; i < n; i++) await (await pool.request({ method: "POST", path: side.path, headers: side.headers, body: BODY })).body.json();
  } finally {
    await pool.close();
  }
}

const dir = await tempDir("svc-bench-telemetry-");
const sides: Side[] = [];
let jaeger: RunningJaeger | undefined;
let scraping: NodeJS.Timeout | undefined;
try {
  const bin = builtPackage(dir);
  const artifact = await buildFixtureArtifact();
  const { OTEL_EXPORTER_OTLP_ENDPOINT: _, ...base } = process.env;
  const variants: Array<[string, NodeJS.ProcessEnv]> = [
    ["off", { ...base, SVC_METRICS: "0" }],
    ["metrics", { ...base }],
  ];
  if (JAEGER) {
    jaeger = await startJaeger(JAEGER);
    variants.push(["tracing", { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpUrl, OTEL_SERVICE_NAME: "svc-bench" }]);
  } else process.stdout.write("no Jaeger binary (scripts/setup.sh builds it): the tracing side is skipped\n");
  for (const [name, env] of variants) {
    const platform = await startBuiltPlatform(dir, { env, bin, stateDir: join(dir, `platform-${name}`) });
    const p = { url: platform.url, apiKey: platform.apiKey };
    const { endpoints } = await deploy(p, artifact, [{ name: "work", workersMin: 2, workersMax: 2 }]);
    const headers = { authorization: `Bearer ${platform.apiKey}`, "content-type": "application/json" };
    const side: Side = { name, platform, path: `/v2/${endpoints.work!.id}/runsync`, headers, rps: [] };
    await waitFor(
      `${name}: 2 warm workers`,
      async () =>
        ((await (await fetch(`${platform.url}/v2/${endpoints.work!.id}/health`, { headers })).json()) as { workers: { idle: number } }).workers.idle === 2,
      60_000,
    );
    sides.push(side);
  }
  // Prometheus' part: a scrape a second of every platform that has metrics.
  scraping = setInterval(() => {
    for (const s of sides) if (s.name !== "off") void fetch(`${s.platform.url}/metrics`, { headers: s.headers }).then((r) => r.text());
  }, 1000);
  for (const side of sides) await warm(side, WARMUP);
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < sides.length; k++) {
      const side = sides[(round + k) % sides.length]!;
      side.rps.push(await load(side, CLIENTS, SECONDS));
    }
  }
} finally {
  clearInterval(scraping);
  for (const s of sides) {
    s.platform.child.kill("SIGTERM");
    await new Promise((r) => s.platform.child.once("exit", r));
  }
  await jaeger?.stop();
  rmSync(dir, { recursive: true, force: true });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const off = median(sides.find((s) => s.name === "off")!.rps);
process.stdout.write(`\nruntime cost of telemetry: ${CLIENTS} concurrent runsync clients, ${ROUNDS} rounds of ${SECONDS} s, 2 workers\n`);
for (const s of sides) {
  const m = median(s.rps);
  const goal = s.name === "metrics" ? "goal ≥ 0.97×" : s.name === "tracing" ? "goal ≥ 0.90×" : "";
  process.stdout.write(
    `${s.name.padEnd(8)} ${m.toFixed(0).padStart(6)} req/s median  (${s.rps.map((x) => x.toFixed(0)).join(" · ")})  ${(m / off).toFixed(3)}× off  ${goal}\n`,
  );
}
