/**
 * svc:secret-refs — a deploy (or `svc run`) whose endpoints' env references a secret the platform
 * does not have (`{{ PLATFORM_SECRET_<name> }}`) fails as soon as the manifest is known, before
 * dependencies are installed, packed or uploaded, naming each missing secret and the command that
 * creates it. Only names are compared: values never leave the platform. docs/platform.md, "Secrets".
 */
import { errors } from "../core/errors.ts";
import { secretNamesIn } from "../core/secret-refs.ts";
import type { SvcPlugin } from "../core/types.ts";

export const PLUGIN_NAME = "svc:secret-refs";

export function secretRefs(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.manifest.tapPromise(PLUGIN_NAME, async (manifest, ctx) => {
        if (!ctx.client) return manifest; // `svc build`: nothing to check against
        const wanted = Object.values(manifest.endpoints).map((endpoint) => ({ endpoint: endpoint.name, names: secretNamesIn(Object.values(endpoint.env)) }));
        if (!wanted.some((w) => w.names.length > 0)) return manifest;
        const existing = new Set((await ctx.client.listSecrets()).map((s) => s.name));
        for (const { endpoint, names } of wanted) {
          const missing = names.filter((name) => !existing.has(name));
          if (missing.length > 0) throw errors.SECRET_MISSING(missing, endpoint);
        }
        return manifest;
      });
    },
  };
}
