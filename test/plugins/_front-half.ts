/** Runs the front half of `svc build` (discover → manifest) with only its own plugins. */
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
import { rejection } from "../_support/rejection.ts";

export { copyFixture, FIXTURES } from "./_helpers.ts";

export const frontHalfPlugins = (): SvcPlugin[] => [discoverPython(), groupEndpoints(), lbRoutes(), gpuImage(), pythonHandlers(), manifest()];

export async function buildUntilManifest(
  root: string,
  { config = {}, plugins = [], logger = createLogger("silent") }: { config?: SvcConfig; plugins?: SvcPlugin[]; logger?: Logger } = {},
): Promise<BuildContext> {
  const resolved = await resolveConfig(root, config);
  const ctx = createContext(root, resolved, { ...defaultBuildOptions, until: "manifest" }, logger);
  return new Pipeline([...frontHalfPlugins(), ...plugins]).run(ctx);
}

/** Runs fn and answers what it threw, synchronously or not (fails when it did not throw). */
export const caught = (fn: () => unknown): Promise<any> => rejection((async () => fn())());
