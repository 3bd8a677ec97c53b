/**
 * The public face of plugins/: the built-in plugins, one per stage job, in the order they tap (each
 * named `svc:<job>`), and the helpers the CLI and the dev server share with them: cli/, dev/ and
 * testing/ import plugins/ from here (test/core/layers.test.ts).
 */
import { relative } from "node:path";
import { runPipeline, type RunOptions } from "../core/build.ts";
import type { BuildContext, SvcPlugin } from "../core/types.ts";
import { analyze, PLUGIN_NAME as ANALYZE_PLUGIN } from "./analyze/index.ts";
import { checkImports } from "./check-imports.ts";
import { configure } from "./configure.ts";
import { discoverPython } from "./discover-python/index.ts";
import { discoverStockWorker } from "./discover-stock-worker/index.ts";
import { excludePreinstalled } from "./exclude-preinstalled.ts";
import { gpuImage } from "./gpu-image.ts";
import { imagePins } from "./image-pins.ts";
import { groupEndpoints } from "./group-endpoints.ts";
import { lbRoutes } from "./lb-routes.ts";
import { manifest } from "./manifest.ts";
import { pipInstall } from "./pip-install.ts";
import { provision } from "./provision.ts";
import { pythonHandlers } from "./python-handlers.ts";
import { resolveDeps } from "./resolve-deps.ts";
import { secretRefs } from "./secret-refs.ts";
import { volumeRefs } from "./volume-refs.ts";
import { sizeGuard } from "./size-guard.ts";
import { tarPack } from "./tar-pack.ts";
import { upload } from "./upload.ts";

export { ANALYZE_PLUGIN };
export { devServerPlugin, PLUGIN_NAME as DEV_SERVER_PLUGIN, type DevDeploySteps, type EndpointChanges } from "./dev-server.ts";
export { createIgnore } from "./discover-python/index.ts";
export { sharedParser } from "./_python/index.ts";
export { endpointInput, PROVISION_CONCURRENCY, resolveVolumeIds } from "./_provisioning.ts";
export { shortSha, uploadedLine } from "./upload.ts";

export function builtinPlugins(): SvcPlugin[] {
  return [
    discoverStockWorker(),
    discoverPython(),
    groupEndpoints(),
    lbRoutes(),
    gpuImage(),
    pythonHandlers(),
    manifest(),
    secretRefs(),
    volumeRefs(),
    resolveDeps(),
    excludePreinstalled(),
    imagePins(),
    pipInstall(),
    checkImports(),
    tarPack(),
    sizeGuard(),
    analyze(),
    upload(),
    provision(),
    configure(),
  ];
}

/**
 * runPipeline with svc's built-in plugins: what `svc build`, `svc deploy`, the dev server and
 * svc/testing run (core/ imports nothing from plugins/: the built-ins are handed in here, as
 * webpack.js applies its built-in plugins outside the Compiler).
 */
export function runBuild(options: Omit<RunOptions, "builtins">): Promise<BuildContext> {
  return runPipeline({
    ...options,
    builtins: builtinPlugins(),
    prepare: async (ctx) => {
      warnIdleFlags(ctx);
      await options.prepare?.(ctx);
    },
  });
}

/** A flag whose plugin the config removed does nothing: say so rather than stay silent. */
function warnIdleFlags(ctx: BuildContext): void {
  const replaced = ctx.config.plugins.some((plugin) => plugin.name === ANALYZE_PLUGIN);
  if (ctx.options.analyze && ctx.config.disablePlugins.includes(ANALYZE_PLUGIN) && !replaced) {
    ctx.logger.warn(
      `--analyze has no effect: disablePlugins${ctx.config.configFile ? ` in ${relative(ctx.root, ctx.config.configFile)}` : ""} removes ${ANALYZE_PLUGIN}, the plugin that writes .svc/analyze.html and prints the size summary; remove it from disablePlugins to analyze the artifact.`,
    );
  }
}
