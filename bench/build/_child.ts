/**
 * One measured job in its own process (so maxRSS is the job's own):
 *   build <root> [--no-deps]   runs the build pipeline, prints {"ms", "cpuMs", "reusedArtifact", "pipRan", "stages", "maxRssMB"}
 *   pack <dir>                 packs every file under <dir> with svc:tar-pack, prints {"ms", "bytes", "unpacked", "sha256", "maxRssMB"}
 */
import { createContext } from "../../core/build.ts";
import { runBuild as runPipeline } from "../../testing/index.ts";
import { resolveConfig } from "../../core/config.ts";
import { createLogger } from "../../core/logger.ts";
import { packArtifact, walkFiles } from "../../plugins/tar-pack.ts";

const [mode, root, ...rest] = process.argv.slice(2);
const maxRssMB = () => process.resourceUsage().maxRSS / 1024;

if (mode === "build" && root) {
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const ctx = await runPipeline({ root, logger: createLogger("warn"), options: { noDeps: rest.includes("--no-deps") } });
  const ms = performance.now() - started;
  // CPU time of the whole process (its thread pool too) over the pipeline: what the build cost, whatever the machine's load
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  const pack = ctx.meta.get("svc:tar-pack");
  const pip = ctx.meta.get("svc:pip-install");
  const stages = Object.fromEntries(ctx.logger.timings.map((t) => [t.stage, Math.round(t.ms)]));
  console.log(JSON.stringify({ ms, cpuMs, reusedArtifact: Boolean(pack?.reused), pipRan: Boolean(pip?.ran), stages, maxRssMB: maxRssMB() }));
} else if (mode === "pack" && root) {
  const config = await resolveConfig(root, {});
  const ctx = createContext(root, config, { until: "pack", keepBuild: false, noDeps: true, exclude: [], analyze: false }, createLogger("warn"));
  ctx.sourceFiles = (await walkFiles(root, (name) => name === ".svc")).map((f) => f.rel);
  const started = performance.now();
  const artifact = await packArtifact(ctx);
  console.log(
    JSON.stringify({ ms: performance.now() - started, bytes: artifact.size, unpacked: artifact.unpackedSize, sha256: artifact.sha256, maxRssMB: maxRssMB() }),
  );
} else {
  console.error("usage: _child.ts build <root> [--no-deps] | pack <dir>");
  process.exit(2);
}
