/**
 * svc:manifest — builds the manifest from ctx.endpoints at HOOK_ORDER.FIRST of the `manifest` hook,
 * and at HOOK_ORDER.LAST validates it (zod schema, core/manifest.ts) and writes `.svc/svc_manifest.json`
 * and `<buildDir>/svc_manifest.json`. Plugins tapping in between (the default stage) may change it.
 * Field by field: docs/manifest.md.
 */
import { join } from "node:path";
import { MANIFEST_FILE, MANIFEST_VERSION, manifestText, parseManifest, type Manifest, type ManifestEndpoint } from "../core/manifest.ts";
import { HOOK_ORDER } from "../core/pipeline.ts";
import type { BuildContext, EndpointSpec, SvcPlugin } from "../core/types.ts";
import { fileIndexOf, type FileIndex, type HashProgress } from "./_file-index.ts";
import { writeIfChanged } from "./_fs.ts";

export const PLUGIN_NAME = "svc:manifest";

export function manifest(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.manifest.tapPromise({ name: PLUGIN_NAME, stage: HOOK_ORDER.FIRST }, async (_manifest, ctx) => createManifest(ctx));
      pipeline.hooks.manifest.tapPromise({ name: PLUGIN_NAME, stage: HOOK_ORDER.LAST }, async (current, ctx) => {
        const valid = parseManifest(current, MANIFEST_FILE);
        const text = manifestText(valid);
        const index = await fileIndexOf(ctx);
        await Promise.all([join(ctx.outDir, MANIFEST_FILE), join(ctx.buildDir, MANIFEST_FILE)].map((file) => writeIfChanged(file, text, index)));
        await index.save();
        return valid;
      });
    },
  };
}

export async function createManifest(ctx: BuildContext): Promise<Manifest> {
  const endpoints: Record<string, ManifestEndpoint> = {};
  const functions: Record<string, string> = {};
  const routes: Manifest["routes"] = {};
  for (const endpoint of ctx.endpoints) {
    endpoints[endpoint.name] = manifestEndpoint(endpoint);
    for (const fn of endpoint.functions) functions[fn.name] = endpoint.name;
    if (endpoint.type === "LB") {
      routes[endpoint.name] = endpoint.functions.flatMap((fn) => (fn.route ? [{ method: fn.route.method, path: fn.route.path, function: fn.name }] : []));
    }
  }
  return {
    version: MANIFEST_VERSION,
    app: ctx.config.app,
    pythonVersion: ctx.config.pythonVersion,
    fingerprint: await fingerprint(ctx.root, ctx.sourceFiles, await fileIndexOf(ctx), (total) =>
      ctx.logger.progress("manifest: hashing the app's files", total),
    ),
    endpoints,
    functions,
    routes,
  };
}

/**
 * Missing handler/image (their plugins disabled) are left empty here so that the stage-100
 * validation names them, unless a plugin in between fills them in.
 */
function manifestEndpoint(endpoint: EndpointSpec): ManifestEndpoint {
  return {
    name: endpoint.name,
    type: endpoint.type,
    file: endpoint.file,
    module: endpoint.module,
    handler: endpoint.handler ?? "",
    functions: endpoint.functions.map((fn) => ({
      name: fn.name,
      module: fn.module,
      line: fn.line,
      isAsync: fn.isAsync,
      isGenerator: fn.isGenerator,
      ...(fn.route ? { httpMethod: fn.route.method, httpPath: fn.route.path } : {}),
      ...(fn.params ? { params: fn.params } : {}),
      ...(fn.types ? { types: fn.types } : {}),
      ...(fn.returns ? { returns: fn.returns } : {}),
    })),
    hardware: { ...endpoint.hardware },
    image: endpoint.image ?? "",
    scaling: { ...endpoint.scaling },
    executionTimeoutMs: endpoint.executionTimeoutMs,
    env: { ...endpoint.env },
    dependencies: [...endpoint.dependencies],
    ...(endpoint.volume ? { volume: endpoint.volume } : {}),
    ...(endpoint.schedule ? { schedule: { ...endpoint.schedule } } : {}),
    ...(endpoint.batch ? { batch: { ...endpoint.batch } } : {}),
    ...(endpoint.retries && { retries: { ...endpoint.retries } }),
    ...(endpoint.network === false ? { network: false as const } : {}),
    ...(endpoint.runtime ? { runtime: endpoint.runtime } : {}),
  };
}

/**
 * `sha256:<hex>` over the source files sorted by path (code units): for each, the path, a NUL, the
 * byte length in decimal, a NUL, the sha256 of its bytes in hex, a NUL. Any rename, edit, addition
 * or removal changes it. The per-file hashes come from the file index (docs/manifest.md): an
 * unchanged file costs one stat and is not read, a changed one is hashed while streaming.
 */
export async function fingerprint(root: string, files: readonly string[], index: FileIndex, progress?: HashProgress): Promise<string> {
  return `sha256:${await index.listDigest(root, files, progress)}`;
}
