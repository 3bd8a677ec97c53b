/**
 * One measured build in its own process, under plain node against the built package's `svc/testing`
 * (the code `svc build` runs once installed):
 *   node _child-built.mjs <dist/testing.mjs> <root> [--no-deps]
 * prints {"ms", "cpuMs", "reusedArtifact", "pipRan", "stages", "maxRssMB"} as _child.ts's build mode does.
 */
import { pathToFileURL } from "node:url";

const [testing, root, ...rest] = process.argv.slice(2);
if (!testing || !root) {
  console.error("usage: _child-built.mjs <dist/testing.mjs> <root> [--no-deps]");
  process.exit(2);
}
// runBuild builds `root` in place (buildFolder would build a fresh copy: no warm caches to measure)
const { runBuild } = await import(pathToFileURL(testing).href);
const { createLogger } = await import(pathToFileURL(testing.replace(/testing\.mjs$/, "index.mjs")).href);
const started = performance.now();
const cpuBefore = process.cpuUsage();
const ctx = await runBuild({ root, logger: createLogger("silent"), options: { noDeps: rest.includes("--no-deps") } });
const ms = performance.now() - started;
const cpu = process.cpuUsage(cpuBefore);
const stages = Object.fromEntries(ctx.logger.timings.map((t) => [t.stage, Math.round(t.ms)]));
console.log(
  JSON.stringify({
    ms,
    cpuMs: (cpu.user + cpu.system) / 1000,
    reusedArtifact: Boolean(ctx.meta.get("svc:tar-pack")?.reused),
    pipRan: Boolean(ctx.meta.get("svc:pip-install")?.ran),
    stages,
    maxRssMB: process.resourceUsage().maxRSS / 1024,
  }),
);
