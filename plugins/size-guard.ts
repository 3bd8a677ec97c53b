/**
 * svc:size-guard — refuses an artifact over `config.maxArtifactBytes` (1.5 GB by default, spec 8),
 * naming the biggest packages and folders so the user knows what to `--exclude`.
 *
 * Which size: the spec names two limits of the same value, "artifact size" (the .tar.gz file) and
 * "deployment size" (the unpacked tree a worker runs from). Both are checked; the error says which
 * one broke the limit and gives both numbers (the unpacked size is checked first: it is the larger
 * one except for incompressible trees, where tar headers make the file a little bigger).
 */
import { errors } from "../core/errors.ts";
import type { SvcPlugin } from "../core/types.ts";
import { formatGroupTable, groupEntries } from "./_artifact-groups.ts";

export const PLUGIN_NAME = "svc:size-guard";

export function sizeGuard(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.afterPack.tapPromise(PLUGIN_NAME, async (artifact, ctx) => {
        const limit = ctx.config.maxArtifactBytes;
        const sizes = { compressed: artifact.size, unpacked: artifact.unpackedSize };
        const which = sizes.unpacked > limit ? "unpacked" : sizes.compressed > limit ? "compressed" : undefined;
        if (!which) return;
        throw errors.ARTIFACT_TOO_LARGE(which, sizes, limit, formatGroupTable(groupEntries(artifact.entries), artifact.unpackedSize));
      });
    },
  };
}
