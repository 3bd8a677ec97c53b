/**
 * svc:analyze (`svc build --analyze`) — writes `.svc/analyze.html`, a treemap of the artifact by
 * folder and package (rendered by rollup-plugin-visualizer's CLI from a synthetic raw-data file),
 * and prints the biggest top-level entries. It runs before svc:size-guard (HOOK_ORDER.BEFORE_BUILTINS) so that an
 * artifact that is too large still gets its report.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { basename, join, relative } from "node:path";
import { promisify } from "node:util";
import { formatBytes } from "../../core/errors.ts";
import { HOOK_ORDER } from "../../core/pipeline.ts";
import type { Artifact, BuildContext, SvcPlugin } from "../../core/types.ts";
import { formatGroupTable, groupEntries } from "../_artifact-groups.ts";
import { visualizerData } from "./_visualizer-data.ts";

export const PLUGIN_NAME = "svc:analyze";
export const ANALYZE_FILE = "analyze.html";

const run = promisify(execFile);

/** The package exports only its plugin entry, so find its CLI along the node_modules lookup paths. */
function visualizerCli(): string {
  const paths = createRequire(import.meta.url).resolve.paths("rollup-plugin-visualizer") ?? [];
  const found = paths.map((dir) => join(dir, "rollup-plugin-visualizer", "dist", "bin", "cli.js")).find((file) => existsSync(file));
  if (!found) throw new Error("rollup-plugin-visualizer is not installed next to svc (needed by --analyze)");
  return found;
}

export async function writeAnalysis(artifact: Artifact, ctx: BuildContext): Promise<string> {
  const out = join(ctx.outDir, ANALYZE_FILE);
  const dataFile = join(ctx.outDir, `analyze-data.${process.pid}.json`);
  await writeFile(dataFile, JSON.stringify(visualizerData(artifact.entries, basename(artifact.path))));
  try {
    await run(process.execPath, [visualizerCli(), "--template", "treemap", "--title", `${ctx.config.app} artifact (${formatBytes(artifact.unpackedSize)} unpacked)`, "--filename", out, dataFile], {
      maxBuffer: 16 << 20,
    });
  } finally {
    await rm(dataFile, { force: true });
  }
  return out;
}

export function analyze(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.afterPack.tapPromise({ name: PLUGIN_NAME, stage: HOOK_ORDER.BEFORE_BUILTINS }, async (artifact, ctx) => {
        if (!ctx.options.analyze) return;
        const file = await writeAnalysis(artifact, ctx);
        const groups = groupEntries(artifact.entries);
        ctx.logger.info(`artifact contents (${formatBytes(artifact.unpackedSize)} unpacked, ${formatBytes(artifact.size)} compressed):`);
        ctx.logger.info(formatGroupTable(groups, artifact.unpackedSize, 15));
        ctx.logger.info(`treemap: ${relative(process.cwd(), file) || file}`);
      });
    },
  };
}
