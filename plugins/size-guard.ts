/**
 * svc:size-guard — refuses an artifact over `config.maxArtifactBytes` (1.5 GB by default, spec 8),
 * naming the biggest packages and folders so the user knows what to `--exclude`.
 *
 * Which size: the spec names two limits of the same value, "deployment size" and "artifact size".
 * The deployment is the unpacked tree a worker runs from; the artifact is the .tar.gz file. We check
 * the larger of the two (in practice the unpacked size, except for incompressible trees where tar
 * headers make the file a little bigger), so an artifact passing here passes both limits.
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
        const size = Math.max(artifact.size, artifact.unpackedSize);
        if (size <= limit) return;
        throw errors.ARTIFACT_TOO_LARGE(size, limit, formatGroupTable(groupEntries(artifact.entries), artifact.unpackedSize));
      });
    },
  };
}
