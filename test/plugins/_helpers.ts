/** Hand-made build contexts for plugin unit tests (no discovery needed). */
import { cpSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createLogger, type Logger } from "../../core/logger.ts";
import { Pipeline } from "../../core/pipeline.ts";
import { createContext } from "../../core/build.ts";
import type { BuildContext, BuildOptions, EndpointSpec, ResolvedConfig, SvcPlugin } from "../../core/types.ts";

export const FIXTURES = resolve(import.meta.dirname, "../../fixtures");

/** Copies `fixtures/<name>` (without its `.svc/`) into a fresh temp folder and returns its path. */
export function copyFixture(name: string): string {
  // the fixture's own folder name, so the app name (and the manifest) is the same in every copy
  const dir = join(mkdtempSync(join(tmpdir(), "svc-test-")), name.split("/").pop()!);
  cpSync(join(FIXTURES, name), dir, { recursive: true, filter: (src) => !src.split("/").includes(".svc") });
  return dir;
}

export function captureLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger("debug", (line) => lines.push(line)) as Logger & { lines: string[] };
  logger.lines = lines;
  return logger;
}

export function endpoint(name: string, dependencies: string[] = []): EndpointSpec {
  return {
    name,
    type: "QB",
    file: "workers/cpu.py",
    module: "workers.cpu",
    line: 4,
    functions: [],
    hardware: { instanceIds: ["cpu3c-2-4"] },
    scaling: { workersMin: 0, workersMax: 3, idleTimeout: 5, scalerType: "QUEUE_DELAY", scalerValue: 4 },
    executionTimeoutMs: 600000,
    env: {},
    dependencies,
  };
}

export function makeCtx(
  root: string,
  extra: { options?: Partial<BuildOptions>; config?: Partial<ResolvedConfig>; endpoints?: EndpointSpec[]; sourceFiles?: string[] } = {},
): BuildContext & { logger: ReturnType<typeof captureLogger> } {
  const config: ResolvedConfig = {
    app: "test-app",
    pythonVersion: "3.11",
    plugins: [],
    disablePlugins: [],
    images: { gpu: "gpu", cpu: "cpu" },
    exclude: [],
    maxArtifactBytes: 1.5e9,
    ignore: [],
    ...extra.config,
  };
  const logger = captureLogger();
  const ctx = createContext(root, config, { until: "pack", keepBuild: false, noDeps: false, exclude: [], analyze: false, ...extra.options }, logger);
  return Object.assign(ctx, { logger, endpoints: extra.endpoints ?? [], sourceFiles: extra.sourceFiles ?? [] });
}

/** Runs the pipeline up to afterPack with only the given plugins. */
export async function runPlugins(plugins: SvcPlugin[], ctx: BuildContext): Promise<BuildContext> {
  return new Pipeline(plugins).run(ctx);
}

/** Whether PyPI answers (a quick HEAD request); tests needing it are skipped otherwise. */
export async function pypiReachable(): Promise<boolean> {
  try {
    const response = await fetch("https://pypi.org/simple/six/", { method: "HEAD", signal: AbortSignal.timeout(5000) });
    return response.ok;
  } catch {
    return false;
  }
}
