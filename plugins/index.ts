/**
 * The public face of plugins/: the built-in plugins, one per stage job, in the order they tap (each
 * named `svc:<job>`), and the helpers the CLI shares with them; cli/ imports plugins/ from here.
 */
import type { SvcPlugin } from "../core/types.ts";
import { analyze } from "./analyze/index.ts";
import { checkImports } from "./check-imports.ts";
import { configure } from "./configure.ts";
import { discoverPython } from "./discover-python/index.ts";
import { excludePreinstalled } from "./exclude-preinstalled.ts";
import { gpuImage } from "./gpu-image.ts";
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

export { mapLimit } from "./_map-limit.ts";
export { PLUGIN_NAME as ANALYZE_PLUGIN } from "./analyze/index.ts";
export { LIVE_PREFIX, PROVISION_CONCURRENCY } from "./provision.ts";

export function builtinPlugins(): SvcPlugin[] {
  return [
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
