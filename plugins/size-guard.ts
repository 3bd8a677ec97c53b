/**
 * svc:size-guard — refuses an artifact over `config.maxArtifactBytes` (1.5 GB by default, spec 8),
 * naming the biggest packages and folders and what to do about each kind: packages → `--exclude`,
 * the app's own files → `.svcignore` or a network volume. The refused artifact is removed.
 *
 * Which size: the spec names two limits of the same value, "artifact size" (the .tar.gz file) and
 * "deployment size" (the unpacked tree a worker runs from). Both are checked; the error says which
 * one broke the limit and gives both numbers (the unpacked size is checked first: it is the larger
 * one except for incompressible trees, where tar headers make the file a little bigger).
 */
import { rm } from "node:fs/promises";
import { errors } from "../core/errors.ts";
import type { SvcPlugin } from "../core/types.ts";
import { distributionsOf, formatGroupTable, groupEntries, type EntryGroup } from "./_artifact-groups.ts";

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
        const groups = groupEntries(artifact.entries, await distributionsOf(ctx.depsDir));
        // A refused artifact is not left behind for a later deploy or upload to pick up.
        await rm(artifact.path, { force: true });
        throw errors.ARTIFACT_TOO_LARGE(which, sizes, limit, formatGroupTable(groups, artifact.unpackedSize), whatToLeaveOut(groups, artifact.unpackedSize));
      });
    },
  };
}

/** The big groups (a tenth of the tree or more, else the biggest), split into packages and app files. */
export function whatToLeaveOut(groups: EntryGroup[], total: number): { packages: string[]; appFiles: string[] } {
  const big = groups.filter((group) => group.size >= total / 10);
  const chosen = big.length ? big : groups.slice(0, 1);
  const packages = chosen.filter((g) => g.name.startsWith("site-packages/") && !g.name.endsWith("/")).map((g) => g.name.slice("site-packages/".length));
  // svc/ is the runtime every artifact needs; the rest is the app's own
  const appFiles = chosen.filter((g) => !g.name.startsWith("site-packages/") && g.name !== "svc/").map((g) => g.name);
  return { packages, appFiles };
}
