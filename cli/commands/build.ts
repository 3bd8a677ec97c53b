/** `svc build`: the build pipeline up to the artifact (spec 4.4), with a summary or a JSON result. */
import { relative } from "node:path";
import type { CAC } from "cac";
import { formatBytes } from "../../core/format-bytes.ts";
import type { BuildContext } from "../../core/types.ts";
import { runBuild } from "../../plugins/index.ts";
import { commandLogger, loadDotEnv, parseList, printJson, projectRoot, wholeWait, type CommonFlags } from "../_shared.ts";

interface BuildFlags extends CommonFlags {
  analyze?: boolean;
  exclude?: string | string[];
  /** cac turns `--no-deps` into `deps: false`. */
  deps?: boolean;
  keepBuild?: boolean;
  strict?: boolean;
}

/** The machine-readable result of `svc build --json`. */
export function buildResult(ctx: BuildContext) {
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
    timings: Object.fromEntries(ctx.logger.timings.map((t) => [t.stage, Math.round(t.ms)])),
    warnings: [...ctx.logger.warnings],
  };
}

function printSummary(ctx: BuildContext, started: number): void {
  const artifact = ctx.artifact;
  const lines = [""];
  if (artifact) {
    lines.push(`artifact  ${relative(process.cwd(), artifact.path) || artifact.path}`);
    lines.push(`size      ${formatBytes(artifact.size)} (${formatBytes(artifact.unpackedSize)} unpacked, ${artifact.entries.length} files)`);
    lines.push(`sha256    ${artifact.sha256}`);
  }
  lines.push(`endpoints ${ctx.endpoints.length}`);
  for (const endpoint of ctx.endpoints) {
    const what = endpoint.type === "LB" ? `${endpoint.functions.length} route(s)` : endpoint.functions.map((fn) => fn.name).join(", ");
    lines.push(`  ${endpoint.name.padEnd(24)} ${endpoint.type}  ${what}${endpoint.image ? `  [${endpoint.image}]` : ""}`);
  }
  if (ctx.excluded.length) lines.push(`excluded  ${ctx.excluded.map((r) => r.name).join(", ")}`);
  lines.push(
    `built in ${wholeWait(
      ctx.logger.timings.reduce((sum, t) => sum + t.ms, 0),
      started,
    )}`,
  );
  process.stdout.write(`${lines.join("\n")}\n`);
}

export function registerBuild(cli: CAC): void {
  cli
    .command("build", "Build the app into .svc/artifact.tar.gz (no upload)")
    .option("--analyze", "Write .svc/analyze.html (a treemap of the artifact) and print the biggest entries")
    .option("--exclude <packages>", "Leave these packages out of the artifact (comma-separated, repeatable)")
    .option("--no-deps", "Do not install requirements (the artifact has no site-packages/)")
    .option("--keep-build", "Keep the build: the artifact's whole tree in .svc/artifact/ (what a worker sees at /app) and the generated files in .svc/.build/")
    .option("--strict", "Fail on what otherwise warns: a module-level import the endpoint's image cannot satisfy")
    .option("--json", "Print a machine-readable result on stdout")
    .option("--root <dir>", "Project folder (default: the current folder)")
    .option("--quiet", "Only print warnings and errors")
    .action(async (flags: BuildFlags) => {
      const root = projectRoot(flags);
      loadDotEnv(root);
      const started = performance.now();
      const ctx = await runBuild({
        root,
        logger: commandLogger(flags),
        env: { command: "build", mode: "production" },
        options: {
          until: "pack",
          analyze: Boolean(flags.analyze),
          exclude: parseList(flags.exclude),
          noDeps: flags.deps === false,
          keepBuild: Boolean(flags.keepBuild),
          strict: Boolean(flags.strict),
        },
      });
      if (flags.json) printJson(buildResult(ctx));
      else printSummary(ctx, started);
    });
}
