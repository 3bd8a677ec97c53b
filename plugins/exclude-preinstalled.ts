/**
 * svc:exclude-preinstalled — drops the packages the base images already have (spec 8.1) and those
 * the user excluded (`--exclude`, config `exclude`), and says which it dropped and why: a silent
 * drop is the kind of thing that costs users an afternoon. A pre-installed package is dropped only
 * when every endpoint's image holds it (core/images.ts): the slim CPU image has no numpy, so an app
 * with a `cpu=` endpoint keeps the numpy its pandas needs. A user exclusion that matches no
 * requirement (a typo: `--exclude reqests`) is a build problem naming the closest requirement
 * (ctx.problem: a warning, an error under --strict).
 */
import { closestName } from "../core/closest.ts";
import { errors } from "../core/errors.ts";
import { HOOK_ORDER } from "../core/pipeline.ts";
import type { BuildContext, SvcPlugin } from "../core/types.ts";
import { describeReason, exclusionReasons } from "./_exclusions.ts";
import { normalizeName } from "./_requirements.ts";

export const PLUGIN_NAME = "svc:exclude-preinstalled";

/** The user's exclusions (normalised) and where each was given. */
function userExclusions(ctx: Pick<BuildContext, "config" | "options">): Map<string, string> {
  const given = new Map<string, string>();
  const add = (raw: string, from: string) => {
    for (const name of raw
      .split(",")
      .map((n) => n.trim())
      .filter(Boolean))
      if (!given.has(normalizeName(name))) given.set(normalizeName(name), from);
  };
  for (const raw of ctx.options.exclude) add(raw, "--exclude");
  for (const raw of ctx.config.exclude) add(raw, "config exclude");
  return given;
}

export function excludePreinstalled(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      // after every requirement source (svc:resolve-deps and user plugins at the default stage)
      pipeline.hooks.resolveDependencies.tapPromise({ name: PLUGIN_NAME, stage: HOOK_ORDER.AFTER_BUILTINS }, async (requirements, ctx) => {
        const reasons = exclusionReasons(ctx);
        const kept = [];
        for (const requirement of requirements) {
          const reason = reasons.get(requirement.name);
          if (!reason) {
            kept.push(requirement);
            continue;
          }
          ctx.excluded.push({ ...requirement, reason });
          const line = `excluded ${requirement.name} (${requirement.source}): ${describeReason(reason)}`;
          if (reason === "preinstalled") ctx.logger.warn(`${line}; it is not packed into the artifact`);
          else ctx.logger.info(line);
        }
        const names = [...new Set(requirements.map((r) => r.name))];
        for (const [name, from] of userExclusions(ctx)) {
          if (!names.includes(name)) ctx.problem(errors.EXCLUDE_UNMATCHED(name, from, closestName(name, names), names));
        }
        return kept;
      });
    },
  };
}
