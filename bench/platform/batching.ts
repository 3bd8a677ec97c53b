/**
 * Request batching benchmark (prints figures, asserts nothing; docs/platform.md, "Request batching").
 * Run: npx tsx bench/platform/batching.ts [--seconds 10] [--clients 32]
 *
 * One function with a fixed 50 ms cost per call whatever the batch size (a GPU forward pass),
 * deployed twice on one warm worker each: unbatched, and with Batch(max_size, max_wait_ms=50) for
 * max_size 16 and 32. `--clients` closed-loop runsync clients (default 32) for `--seconds` each.
 * Goals (issue 29): batched requests/s ≥ 10× unbatched, p99 < max_wait_ms + one call (100 ms).
 *
 * The platform runs in its own process from the sources (`bin/svc.mjs platform start
 * --no-rate-limits`), the app is deployed with `svc deploy`'s code, its workers are the real
 * Python runtime.
 */
import { spawn } from "node:child_process";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Pool } from "undici";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { createPlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import { tempDir } from "../../test/platform/_support.ts";

const args = process.argv.slice(2);
const opt = (name: string, fallback: number) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const SECONDS = opt("--seconds", 10);
const CLIENTS = opt("--clients", 32);
const COST_MS = 50;
const MAX_WAIT_MS = 50;
const BIN = new URL("../../bin/svc.mjs", import.meta.url).pathname;

const APP = `import time
from typing import List

from svc import Batch, Endpoint

COST_S = ${COST_MS / 1000}


@Endpoint(name="single", cpu="cpu3c-2-4", workers=(1, 1))
def single(x: int) -> dict:
    time.sleep(COST_S)
    return {"x": x}


@Endpoint(name="batched16", cpu="cpu3c-2-4", workers=(1, 1), batch=Batch(max_size=16, max_wait_ms=${MAX_WAIT_MS}))
def batched16(x: List[int]) -> List[dict]:
    time.sleep(COST_S)  # one call costs the same whatever the batch size
    return [{"x": v} for v in x]


@Endpoint(name="batched32", cpu="cpu3c-2-4", workers=(1, 1), batch=Batch(max_size=32, max_wait_ms=${MAX_WAIT_MS}))
def batched32(x: List[int]) -> List[dict]:
    time.sleep(COST_S)
    return [{"x": v} for v in x]
`;

async function startPlatform(dir: string) {
  const child = spawn(process.execPath, [BIN, "platform", "start", "--dir", join(dir, "platform"), "--port", "0", "--no-rate-limits", "--json"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const started = await new Promise<{ url: string; apiKeyFile: string }>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk;
      try {
        resolve(JSON.parse(out));
      } catch {
        // not the whole JSON yet
      }
    });
    child.once("exit", (code) => reject(new Error(`the platform exited (${code})`)));
  });
  return { child, url: started.url, apiKey: (await readFile(started.apiKeyFile, "utf8")).trim() };
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

/** `clients` runsync loops for `seconds`: requests/s and sorted latencies (ms). */
async function load(base: string, path: string, headers: Record<string, string>) {
  const pool = new Pool(base, { connections: CLIENTS, pipelining: 1 });
  const latencies: number[] = [];
  const t0 = performance.now();
  const end = t0 + SECONDS * 1000;
  try {
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, client) => {
        for (let i = 0; performance.now() < end; i++) {
          const s = performance.now();
          const res = await pool.request({ method: "POST", path, headers, body: JSON.stringify({ input: { x: client * 1_000_000 + i } }) });
          const body = (await res.body.json()) as { status: string; output?: { x: number } };
          if (body.status !== "COMPLETED" || body.output?.x !== client * 1_000_000 + i) throw new Error(`wrong answer: ${JSON.stringify(body)}`);
          latencies.push(performance.now() - s);
        }
      }),
    );
  } finally {
    await pool.close();
  }
  return { rps: latencies.length / ((performance.now() - t0) / 1000), latencies: latencies.sort((a, b) => a - b) };
}

const dir = await tempDir("svc-bench-batching-");
const platform = await startPlatform(dir);
try {
  const root = join(dir, "app");
  await mkdir(root);
  await writeFile(join(root, "embed.py"), APP);
  await writeFile(join(root, "svc.config.ts"), 'export default { app: "bench-batching" };\n');
  const { ctx } = await runDeploy({ root, client: createPlatformClient(platform), logger: createLogger("silent") });
  const headers = { authorization: `Bearer ${platform.apiKey}`, "content-type": "application/json" };
  const path = (name: string) => `/v2/${ctx.deployed.find((e) => e.name === name)!.id}/runsync?wait=60000`;
  for (const name of ["single", "batched16", "batched32"]) {
    const res = await fetch(`${platform.url}${path(name)}`, { method: "POST", headers, body: JSON.stringify({ input: { x: 0 } }) }); // its worker is warm
    if (res.status !== 200) throw new Error(`${name}: ${res.status} ${await res.text()}`);
  }

  console.log(`${CLIENTS} closed-loop runsync clients, ${SECONDS} s each; the function costs ${COST_MS} ms per call, one worker per endpoint`);
  const single = await load(platform.url, path("single"), headers);
  const rows: string[][] = [["endpoint", "requests/s", "p50 ms", "p99 ms", "× unbatched", `p99 goal < ${MAX_WAIT_MS + COST_MS} ms`]];
  rows.push(["unbatched", single.rps.toFixed(1), pct(single.latencies, 50).toFixed(1), pct(single.latencies, 99).toFixed(1), "1.0", ""]);
  for (const [name, label] of [
    ["batched16", "Batch(16, 50 ms)"],
    ["batched32", "Batch(32, 50 ms)"],
  ] as const) {
    const r = await load(platform.url, path(name), headers);
    const p99 = pct(r.latencies, 99);
    rows.push([
      label,
      r.rps.toFixed(1),
      pct(r.latencies, 50).toFixed(1),
      p99.toFixed(1),
      (r.rps / single.rps).toFixed(1),
      p99 < MAX_WAIT_MS + COST_MS ? "met" : "missed",
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  for (const row of rows) console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join("  "));
} finally {
  platform.child.kill("SIGTERM");
  await new Promise((resolve) => platform.child.once("exit", resolve));
  await rm(dir, { recursive: true, force: true });
}
