/**
 * Which source files one worker's start runs through, from `Supervisor.start` to its process
 * spawned (docs/architecture.md, "Where workers run"): V8's precise coverage (function call counts)
 * is reset just before `start` and read once the worker's Python process has a pid. A platform of
 * its own, its timers slowed so that nothing else runs meanwhile; the second worker of an endpoint
 * is the one traced (the first start's one-time probes, the sandbox's and the interpreter's, are not
 * the path). Prints the files and how many calls entered functions of supervisor.ts.
 *
 *   npx tsx bench/platform/start-path.ts
 */
import { Session } from "node:inspector/promises";
import { relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { buildFixtureArtifact, deploy, startTestPlatform, waitFor } from "../../test/platform/_support.ts";

const ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));
const QUIET = { sweepIntervalMs: 3_600_000, scaleIntervalMs: 3_600_000, consoleSampleMs: 3_600_000, pingIntervalS: 3600, longPollMs: 30_000 };

interface ScriptCoverage {
  url: string;
  functions: Array<{ functionName: string; ranges: Array<{ count: number }> }>;
}

const p = await startTestPlatform(QUIET);
try {
  const { endpoints } = await deploy(p, await buildFixtureArtifact(), [{ name: "work", workersMax: 1, idleTimeout: 3600 }]);
  const endpoint = p.context.store.endpoints.get(endpoints.work!.id)!;
  const { supervisor } = p.context;
  const started = (w: { pid?: number; exited: boolean }) => waitFor("the worker's pid", () => w.pid !== undefined || w.exited, 60_000, 1);
  const warm = supervisor.start(endpoint)!;
  await started(warm);
  await supervisor.stop(warm, "warm-up done");
  await new Promise((r) => setTimeout(r, 2000)); // its channel and cgroup end first, outside the trace

  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
  await session.post("Profiler.takePreciseCoverage"); // resets the counts
  const w = supervisor.start(endpoint)!;
  await started(w);
  const { result } = (await session.post("Profiler.takePreciseCoverage")) as { result: ScriptCoverage[] };
  await session.post("Profiler.stopPreciseCoverage");
  session.disconnect();

  const ours = result
    .filter((s) => s.url.startsWith("file://"))
    .map((s) => ({ file: relative(ROOT, fileURLToPath(s.url)), fns: s.functions.filter((f) => (f.ranges[0]?.count ?? 0) > 0) }))
    .filter(
      (s) => !s.file.startsWith("..") && !s.file.startsWith("node_modules") && !s.file.startsWith("bench/") && !s.file.startsWith("test/") && s.fns.length > 0,
    )
    .sort((a, b) => a.file.localeCompare(b.file));
  for (const s of ours) console.log(`${s.file.padEnd(52)} ${s.fns.map((f) => `${f.functionName || "(anonymous)"}×${f.ranges[0]!.count}`).join(" ")}`);
  const supervisorCalls = ours.find((s) => s.file === "platform/workers/supervisor.ts")?.fns.reduce((n, f) => n + f.ranges[0]!.count, 0) ?? 0;
  console.log(`\n${ours.length} source files ran between Supervisor.start and the worker's pid; ${supervisorCalls} calls entered supervisor.ts's functions`);
} finally {
  await p.dispose();
}
