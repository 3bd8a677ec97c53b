/**
 * svc:volume-refs — an endpoint declares its network volume by name (`@Endpoint(..., volume="wan-weights")`);
 * a deploy (or `svc run`) looks the names up as soon as the manifest is known, before dependencies are
 * installed, packed or uploaded: a volume the platform does not have fails with VOLUME_NOT_FOUND and
 * the command that creates it. The ids found go to svc:provision (networkVolumeId). docs/volumes.md.
 */
import type { SvcPlugin } from "../core/types.ts";
import { resolveVolumeIds } from "./_provisioning.ts";

export const PLUGIN_NAME = "svc:volume-refs";

declare module "../core/types.ts" {
  interface PluginMeta {
    /** Volume name → id, for the endpoints that declare one. */
    "svc:volume-refs": Record<string, string>;
  }
}

export function volumeRefs(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.manifest.tapPromise(PLUGIN_NAME, async (manifest, ctx) => {
        const wanted = Object.values(manifest.endpoints).filter((endpoint) => endpoint.volume);
        if (!ctx.client || wanted.length === 0) return manifest; // `svc build`: nothing to check against
        ctx.meta.set(PLUGIN_NAME, await resolveVolumeIds(ctx.client, wanted, {}));
        return manifest;
      });
    },
  };
}
