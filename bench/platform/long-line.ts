/**
 * Worker output on one line against the embedded platform (prints figures, asserts nothing). Run:
 * npx tsx bench/platform/long-line.ts [MB ...]   (default 10 30 100)
 *
 * A real worker writes N MB to stdout as one line with no newline (fixtures/platform-app `work`,
 * op "print"); meanwhile a client asks the endpoint's /health every 20 ms and the platform's RSS is
 * sampled. Printed per size: the platform's CPU time (user + system, from /proc) from the job's
 * submission to its completion, its RSS before and at peak, /health latency, and the log line kept.
 * Goals (issue 19): linear CPU, platform RSS < 300 MB, /health < 100 ms (docs/platform.md, "Worker logs").
 */
import { readFileSync, rmSync } from "node:fs";
import { api, buildFixtureArtifact, deploy, gqlOk, tempDir, waitFinal } from "../../test/platform/_support.ts";
import { startBuiltPlatform } from "./_platform.ts";

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN) / 1024;
/** utime + stime of the process, in seconds (clock ticks of 10 ms). */
const cpuS = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
};
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
const dir = await tempDir("svc-platform-long-line-");
const { child, url, apiKey, pid } = await startBuiltPlatform(dir);
const p = { url, apiKey };
const lines: string[] = [];
try {
  const { endpoints } = await deploy(p, await buildFixtureArtifact(), [{ name: "work", workersMin: 1, workersMax: 1 }]);
  const work = endpoints.work!.id;
  await waitFinal(p, work, (await api(p, "POST", `/v2/${work}/run`, { input: { op: "echo", value: "warm" } })).body.id, 60_000);
  for (const mb of sizes.length > 0 ? sizes : [10, 30, 100]) {
    const rssBefore = rssMb(pid);
    const cpuBefore = cpuS(pid);
    let peak = rssBefore;
    const latencies: number[] = [];
    const id = (await api(p, "POST", `/v2/${work}/run`, { input: { op: "print", value: mb * 1_000_000 } })).body.id as string;
    let running = true;
    const t0 = performance.now();
    const done = waitFinal(p, work, id, 600_000).finally(() => (running = false));
    while (running) {
      const h0 = performance.now();
      await fetch(`${url}/v2/${work}/health`, { headers: { authorization: `Bearer ${apiKey}` } }).then((r) => r.arrayBuffer());
      latencies.push(performance.now() - h0);
      peak = Math.max(peak, rssMb(pid));
      await new Promise((r) => setTimeout(r, 20));
    }
    const job = await done;
    const wallS = (performance.now() - t0) / 1000;
    const cpu = cpuS(pid) - cpuBefore;
    latencies.sort((a, b) => a - b);
    const { workerLogs } = await gqlOk<{ workerLogs: string[] }>(p, "query($e: String!) { workerLogs(endpointId: $e, limit: 20) }", { e: work });
    const kept = workerLogs.find((line) => line.includes("xxxxxxxxxx"));
    lines.push(
      `${mb} MB on one line: job ${job.status} in ${wallS.toFixed(1)} s; platform CPU ${cpu.toFixed(2)} s; RSS ${rssBefore.toFixed(0)} → peak ${peak.toFixed(0)} MB; ` +
        `/health p50 ${pct(latencies, 50).toFixed(1)} ms, p99 ${pct(latencies, 99).toFixed(1)} ms, max ${pct(latencies, 100).toFixed(1)} ms (${latencies.length} calls); ` +
        `log line kept: ${kept ? `${kept.length} characters, ending "${kept.slice(-40)}"` : "none"}`,
    );
  }
} finally {
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(`\nworker output on one line (goals: linear CPU, RSS < 300 MB, /health < 100 ms)\n${lines.join("\n")}\n`);
