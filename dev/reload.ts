/**
 * One reload (docs/dev-server.md, "Reload"): re-run the dev build through the pipeline, serve the
 * new build, and say in one line what changed. A failed reload keeps the previous build serving.
 */
import { createLogger, formatMs, type Logger } from "../core/logger.ts";
import type { BuildContext } from "../core/types.ts";
import { LIVE_PREFIX } from "../core/client/index.ts";
import { DEV_SERVER_PLUGIN, sharedParser } from "../plugins/index.ts";
import type { CurrentBuild } from "./current-build.ts";
import type { ProjectWatcher } from "./watcher.ts";

export interface ReloadReport {
  ok: boolean;
  files: string[];
  ms: number;
  buildId?: string;
  uploadSkipped?: boolean;
  /** Python files discovery actually re-parsed. */
  parsedFiles?: number;
  updated: string[];
  added: string[];
  removed: string[];
  error?: { code?: string; message: string };
}

export interface ReloaderOptions {
  build(logger: Logger): Promise<BuildContext>;
  current: CurrentBuild;
  logger: Logger;
  watcher(): ProjectWatcher | undefined;
}

const IGNORE_FILES = /^(\.gitignore|\.svcignore|svc\.config\.[mc]?[jt]s)$/;

/** A logger that keeps warnings and errors but not the per-stage lines (reloads print one line). */
function quiet(base: Logger): Logger {
  const logger = createLogger("warn", () => {});
  return { ...logger, warn: (m) => base.warn(m), error: (m) => base.error(m), debug: (m) => base.debug(m), info: (m) => base.debug(m) };
}

export function createReloader(options: ReloaderOptions): (files: string[]) => Promise<ReloadReport> {
  const { current, logger } = options;
  return async function reload(files) {
    const t0 = performance.now();
    const parsedBefore = sharedParser().parsedFiles;
    const shown = files.length > 3 ? `${files.slice(0, 3).join(", ")} and ${files.length - 3} more` : files.join(", ");
    logger.info(`↻ ${shown || "reload"} changed, rebuilding…`);
    try {
      if (files.some((file) => IGNORE_FILES.test(file))) await options.watcher()?.refreshIgnores();
      const ctx = await options.build(quiet(logger));
      const changes = ctx.meta.get(DEV_SERVER_PLUGIN) ?? { updated: [], added: [], removed: [] };
      current.adopt(ctx);
      const report: ReloadReport = {
        ok: true,
        files,
        ms: performance.now() - t0,
        buildId: current.buildId,
        uploadSkipped: ctx.upload?.skipped ?? false,
        parsedFiles: sharedParser().parsedFiles - parsedBefore,
        ...changes,
      };
      const parts = [
        report.uploadSkipped ? "artifact unchanged" : `build ${current.buildId}`,
        report.updated.length ? `updated ${report.updated.map((n) => LIVE_PREFIX + n).join(", ")}` : "",
        report.added.length ? `new ${report.added.join(", ")} (lazy)` : "",
        report.removed.length ? `removed ${report.removed.map((n) => LIVE_PREFIX + n).join(", ")}` : "",
      ].filter(Boolean);
      logger.info(`✓ reloaded in ${formatMs(report.ms)}: ${parts.join("; ")}`);
      return report;
    } catch (error) {
      const e = error as Error & { code?: string };
      logger.error(`reload failed${e.code ? ` [${e.code}]` : ""}: ${e.message}\n  the previous build keeps serving; fix the file and save again.`);
      return { ok: false, files, ms: performance.now() - t0, updated: [], added: [], removed: [], error: { code: e.code, message: e.message } };
    }
  };
}
