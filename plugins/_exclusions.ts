/**
 * Which requirements a build leaves out and why (the user's --exclude and config, and what every
 * endpoint's image holds): shared by svc:exclude-preinstalled, svc:pip-install and svc:check-imports.
 */
import { droppableFor } from "../core/images.ts";
import type { BuildContext, ExcludedRequirement } from "../core/types.ts";
import { normalizeName } from "./_requirements.ts";

/** Why each excluded (normalised) name is excluded; the user's reason wins for a pre-installed name. */
export function exclusionReasons(ctx: Pick<BuildContext, "config" | "options" | "endpoints">): Map<string, ExcludedRequirement["reason"]> {
  const reasons = new Map<string, ExcludedRequirement["reason"]>();
  for (const name of droppableFor(ctx.endpoints)) reasons.set(name, "preinstalled");
  for (const raw of [...ctx.config.exclude, ...ctx.options.exclude]) {
    for (const name of raw
      .split(",")
      .map((n) => n.trim())
      .filter(Boolean))
      reasons.set(normalizeName(name), "excluded-by-user");
  }
  return reasons;
}

export function describeReason(reason: ExcludedRequirement["reason"]): string {
  return reason === "preinstalled" ? "pre-installed in the base image of every endpoint" : "excluded by --exclude / config exclude";
}
