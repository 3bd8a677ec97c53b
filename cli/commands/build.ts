/** `svc build`: the build pipeline up to the artifact (spec 4.4), with a summary or a JSON result. */
import { join, relative } from "node:path";
import type { CAC } from "cac";
import { buildStarting, recordBuild, upToDate } from "../../core/build-record.ts";
import { formatBytes } from "../../core/format-bytes.ts";
import { formatMs, type Logger } from "../../core/logger.ts";
import type { BuildContext } from "../../core/types.ts";
import { commandLogger, loadDotEnv, parseList, printJson, projectRoot, wholeWait, type CommonFlags } from "../_shared.ts";

interface BuildFlags extends CommonFlags {
  analyze?: boolean;
  exclude?: string | string[];
  /** cac turns `--no-deps` into `deps: false`. */
  deps?: boolean;
  keepBuild?: boolean;
  strict?: boolean;
  force?: boolean;
}

/** The machine-readable result of `svc build --json`, timings aside (a skipped build has none of the stages'). */
function buildOutcome(ctx: BuildContext) {
  const artifact = ctx.artifact;
  return {
    ok: true as const,
    artifact: artifact
      ? { path: artifact.path, sha256: artifact.sha256, size: artifact.size, unpackedSize: artifact.unpackedSize, files: artifact.entries.length }
      : null,
    endpoints: ctx.endpoints.map((endpoint) => ({
      name: endpoint.name,
      type: endpoint.type,
      image: endpoint.image ?? null,
      handler: endpoint.handler ?? null,
      functions: endpoint.functions.map((fn) => fn.name),
    })),
    requirements: ctx.requirements.map((r) => ({ spec: r.spec, source: r.source })),
    excluded: ctx.excluded.map((r) => ({ name: r.name, spec: r.spec, source: r.source, reason: r.reason })),
    warnings: [...ctx.logger.warnings],
  };
}

type BuildOutcome = ReturnType<typeof buildOutcome>;

function printSummary(outcome: BuildOutcome, took: string): void {
  const artifact = outcome.artifact;
  const lines = [""];
  if (artifact) {
    lines.push(`artifact  ${relative(process.cwd(), artifact.path) || artifact.path}`);
    lines.push(`size      ${formatBytes(artifact.size)} (${formatBytes(artifact.unpackedSize)} unpacked, ${artifact.files} files)`);
    lines.push(`sha256    ${artifact.sha256}`);
  }
  lines.push(`endpoints ${outcome.endpoints.length}`);
  for (const endpoint of outcome.endpoints) {
    const what = endpoint.type === "LB" ? `${endpoint.functions.length} route(s)` : endpoint.functions.join(", ");
    lines.push(`  ${endpoint.name.padEnd(24)} ${endpoint.type}  ${what}${endpoint.image ? `  [${endpoint.image}]` : ""}`);
  }
  if (outcome.excluded.length) lines.push(`excluded  ${outcome.excluded.map((r) => r.name).join(", ")}`);
  lines.push(took);
  process.stdout.write(`${lines.join("\n")}\n`);
}

const timingsOf = (logger: Logger) => Object.fromEntries(logger.timings.map((t) => [t.stage, Math.round(t.ms)]));

/**
 * The last build's answer when nothing it read changed (core/build-record.ts): its warnings said
 * again, one `upToDate` line where the stages' would be.
 */
function skipUnchanged(root: string, request: string, logger: Logger): BuildOutcome | undefined {
  const checked = performance.now();
  const last = upToDate<BuildOutcome>(root, request);
  if (!last) return undefined;
  logger.stage({ stage: "upToDate", ms: performance.now() - checked, summary: `${last.inputs} inputs as the last build found them (--force builds anyway)` });
  for (const warning of last.result.warnings) logger.warn(warning);
  return last.result;
}

export function registerBuild(cli: CAC): void {
  cli
    .command("build", "Build the app into .svc/artifact.tar.gz (no upload)")
    .option("--analyze", "Write .svc/analyze.html (a treemap of the artifact) and print the biggest entries")
    .option("--exclude <packages>", "Leave these packages out of the artifact (comma-separated, repeatable)")
    .option("--no-deps", "Do not install requirements (the artifact has no site-packages/)")
    .option("--keep-build", "Keep the build: the artifact's whole tree in .svc/artifact/ (what a worker sees at /app) and the generated files in .svc/.build/")
    .option("--strict", "Fail on what otherwise warns: a module-level import the endpoint's image cannot satisfy")
    .option("--force", "Build even when nothing changed since the last build")
    .option("--json", "Print a machine-readable result on stdout")
    .option("--root <dir>", "Project folder (default: the current folder)")
    .option("--quiet", "Only print warnings and errors")
    .action(async (flags: BuildFlags) => {
      const root = projectRoot(flags);
      loadDotEnv(root);
      const started = performance.now();
      const logger = commandLogger(flags);
      const options = { exclude: parseList(flags.exclude), noDeps: flags.deps === false, strict: Boolean(flags.strict) };
      // what the artifact depends on among the flags (--analyze and --keep-build write more, never skipped)
      const request = JSON.stringify({ ...options, exclude: [...options.exclude].sort() });
      const skipped = flags.force || flags.analyze || flags.keepBuild ? undefined : skipUnchanged(root, request, logger);
      if (skipped) {
        if (flags.json) printJson({ ...skipped, upToDate: true, timings: timingsOf(logger) });
        else printSummary(skipped, `up to date in ${formatMs(performance.now() - started)} (start-up before it ${formatMs(started)})`);
        return;
      }
      const start = buildStarting(root, request);
      const { runBuild } = await import("../../plugins/index.ts");
      const ctx = await runBuild({
        root,
        logger,
        env: { command: "build", mode: "production" },
        options: { until: "pack", analyze: Boolean(flags.analyze), keepBuild: Boolean(flags.keepBuild), ...options },
      });
      const outcome = buildOutcome(ctx);
      recordBuild(start, {
        inputs: [...ctx.sourceFiles.map((file) => join(root, file)), ...ctx.dependencies.files, ...ctx.dependencies.folders],
        configEnv: ctx.dependencies.env,
        artifact: ctx.artifact?.path ?? "",
        // the built-ins declare what they read; a plugin of the config, or a built-in it removed, may change that
        recordable: ctx.config.plugins.length === 0 && ctx.config.disablePlugins.length === 0 && ctx.artifact !== undefined,
        result: outcome,
      });
      if (flags.json) printJson({ ...outcome, upToDate: false, timings: timingsOf(ctx.logger) });
      else
        printSummary(
          outcome,
          `built in ${wholeWait(
            ctx.logger.timings.reduce((sum, t) => sum + t.ms, 0),
            started,
          )}`,
        );
    });
}
