/** Runs the front half of `svc build` (discover → manifest) with only its own plugins. */
import { cpSync, mkdtempSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { createContext, defaultBuildOptions } from "../../core/build.ts";
import { resolveConfig } from "../../core/config.ts";
import { createLogger, type Logger } from "../../core/logger.ts";
import { Pipeline } from "../../core/pipeline.ts";
import type { BuildContext, SvcConfig, SvcPlugin } from "../../core/types.ts";
import { discoverPython } from "../../plugins/discover-python/index.ts";
import { gpuImage } from "../../plugins/gpu-image.ts";
import { groupEndpoints } from "../../plugins/group-endpoints.ts";
import { lbRoutes } from "../../plugins/lb-routes.ts";
import { manifest } from "../../plugins/manifest.ts";
import { pythonHandlers } from "../../plugins/python-handlers.ts";

export const FIXTURES = resolve(import.meta.dirname, "../../fixtures");

export const frontHalfPlugins = (): SvcPlugin[] => [discoverPython(), groupEndpoints(), lbRoutes(), gpuImage(), pythonHandlers(), manifest()];

export async function buildUntilManifest(
  root: string,
  { config = {}, plugins = [], logger = createLogger("silent") }: { config?: SvcConfig; plugins?: SvcPlugin[]; logger?: Logger } = {},
): Promise<BuildContext> {
  const resolved = await resolveConfig(root, config);
  const ctx = createContext(root, resolved, { ...defaultBuildOptions, until: "manifest" }, logger);
  return new Pipeline([...frontHalfPlugins(), ...plugins]).run(ctx);
}

/** Copies fixtures/<name> to <tmp>/<random>/<basename> (the folder name is the default app name). */
export function copyFixture(name: string): string {
  const dir = join(mkdtempSync(join(tmpdir(), "svc-front-")), basename(name));
  mkdirSync(dir);
  cpSync(join(FIXTURES, name), dir, { recursive: true, filter: (src) => !src.split("/").includes(".svc") });
  return dir;
}

/** Runs fn and answers what it threw (fails when it did not throw). */
export async function caught(fn: () => unknown): Promise<any> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected an error, nothing was thrown");
}
