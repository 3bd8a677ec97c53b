/**
 * svc:analyze (`svc build --analyze`) — writes `.svc/analyze.html`, a treemap of the artifact
 * coloured by group (the app's files, each installed package, svc's runtime, the generated files)
 * with a legend, sizes on every label and tooltip, and a header with the compressed and unpacked
 * totals against the limit and the ten largest packages (./_treemap.ts); the terminal gets the same
 * summary and the biggest entries. It runs before svc:size-guard (HOOK_ORDER.BEFORE_BUILTINS) so
 * that an artifact that is too large still gets its report.
 */
import { writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { HOOK_ORDER } from "../../core/pipeline.ts";
import type { Artifact, BuildContext, SvcPlugin } from "../../core/types.ts";
import { distributionsOf, formatGroupTable, groupEntries } from "../_artifact-groups.ts";
import { formatSummary, summarize } from "./_summary.ts";
import { renderTreemap } from "./_treemap.ts";

export const PLUGIN_NAME = "svc:analyze";
export const ANALYZE_FILE = "analyze.html";

export async function writeAnalysis(artifact: Artifact, ctx: BuildContext): Promise<{ file: string; summary: string }> {
  const out = join(ctx.outDir, ANALYZE_FILE);
  const summary = summarize(artifact, ctx.config.app, ctx.config.maxArtifactBytes, await distributionsOf(ctx.depsDir));
  await writeFile(out, renderTreemap(summary));
  return { file: out, summary: formatSummary(summary) };
}

/** Which endpoints the artifact serves and what runs each: svc's runtime, or a stock worker's own SDK. */
export function endpointsLine(ctx: BuildContext): string {
  const each = ctx.endpoints.map(
    (e) =>
      `${e.name} (${e.type}, ${e.runtime === "runpod" ? `stock hosted-SDK worker ${e.file}, found by svc:discover-stock-worker` : "@Endpoint, svc's runtime"})`,
  );
  return `endpoints: ${each.join(", ") || "none"}`;
}

export function analyze(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.afterPack.tapPromise({ name: PLUGIN_NAME, stage: HOOK_ORDER.BEFORE_BUILTINS }, async (artifact, ctx) => {
        if (!ctx.options.analyze) return;
        const { file, summary } = await writeAnalysis(artifact, ctx);
        ctx.logger.info(summary);
        ctx.logger.info(endpointsLine(ctx));
        ctx.logger.info("biggest entries, unpacked:");
        ctx.logger.info(formatGroupTable(groupEntries(artifact.entries, await distributionsOf(ctx.depsDir)), artifact.unpackedSize, 15));
        ctx.logger.info(`treemap: ${relative(process.cwd(), file) || file}`);
      });
    },
  };
}
