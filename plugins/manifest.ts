/**
 * svc:manifest — builds the manifest from ctx.endpoints at stage -100 of the `manifest` hook, and at
 * stage 100 validates it (zod schema, core/manifest.ts) and writes `.svc/svc_manifest.json` and
 * `<buildDir>/svc_manifest.json`. Plugins tapping at the default stage 0 may change it in between.
 * Field by field: docs/manifest.md.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { MANIFEST_FILE, MANIFEST_VERSION, manifestText, parseManifest, type Manifest, type ManifestEndpoint } from "../core/manifest.ts";
import type { BuildContext, EndpointSpec, SvcPlugin } from "../core/types.ts";
import { writeIfChanged } from "./_fs.ts";

export const PLUGIN_NAME = "svc:manifest";
export const CREATE_STAGE = -100;
export const WRITE_STAGE = 100;

export function manifest(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.manifest.tapPromise({ name: PLUGIN_NAME, stage: CREATE_STAGE }, async (_manifest, ctx) => createManifest(ctx));
      pipeline.hooks.manifest.tapPromise({ name: PLUGIN_NAME, stage: WRITE_STAGE }, async (current, ctx) => {
        const valid = parseManifest(current, MANIFEST_FILE);
        const text = manifestText(valid);
        await Promise.all([join(ctx.outDir, MANIFEST_FILE), join(ctx.buildDir, MANIFEST_FILE)].map((file) => writeIfChanged(file, text)));
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
    fingerprint: await fingerprint(ctx.root, ctx.sourceFiles),
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
    })),
    hardware: { ...endpoint.hardware },
    image: endpoint.image ?? "",
    scaling: { ...endpoint.scaling },
    executionTimeoutMs: endpoint.executionTimeoutMs,
    env: { ...endpoint.env },
    dependencies: [...endpoint.dependencies],
  };
}

/**
 * `sha256:<hex>` over the source files sorted by path (code units): for each, the path, a NUL, the
 * byte length in decimal, a NUL, then the bytes. Any rename, edit, addition or removal changes it.
 */
export async function fingerprint(root: string, files: readonly string[]): Promise<string> {
  const sorted = [...files].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const contents = await Promise.all(sorted.map((file) => readFile(join(root, file))));
  const hash = createHash("sha256");
  sorted.forEach((file, index) => {
    const bytes = contents[index]!;
    hash.update(file).update("\0").update(String(bytes.length)).update("\0").update(bytes);
  });
  return `sha256:${hash.digest("hex")}`;
}
