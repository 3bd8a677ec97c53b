/**
 * Who presented a key, and may they make this call (../keys/rules.ts, the one table)? The platform's
 * own key (PLATFORM_API_KEY) is the admin; a named key is checked by role and scope; a worker's key
 * keeps its own scoping (./worker-scope.ts). The h3 middleware, the hot runsync path and the shell
 * upgrade all ask here. docs/platform.md, "Keys and roles".
 */
import { errors, type SvcError } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import { digestMatches, secretDigest } from "../_ids.ts";
import { PLATFORM_ADMIN, placeOf, refusal, type Identity } from "../keys/access.ts";
import { ROUTE_RULES, type Rule } from "../keys/rules.ts";
import type { KeyScope } from "../worker-keys.ts";

/** The rule of the load balancer reached by host (`<endpoint>.localhost`). */
export const LB_HOST_RULE = "* <endpoint>.localhost";

export type Caller = { identity: Identity; workerScope?: undefined } | { identity?: undefined; workerScope: KeyScope };

export interface KeyAccess {
  /** The platform's key or a named key's holder (what connection caps key on), else undefined. */
  identify(key: string | undefined): Identity | undefined;
  /** The caller, or 401 UNAUTHORIZED for a missing or unknown key. */
  caller(key: string | undefined): Caller | SvcError;
  /** A named key's refusal of a route (its ROUTE_RULES key), acting on `target` (an endpoint id, a file id); undefined when allowed. */
  routeRefusal(identity: Identity, route: string, target: string | undefined, what: string): SvcError | undefined;
}

export function createKeyAccess(ctx: PlatformContext): KeyAccess {
  const apiKeyDigest = secretDigest(ctx.apiKeyHash);
  const identify = (key: string | undefined) => (digestMatches(key, apiKeyDigest) ? PLATFORM_ADMIN : ctx.keys.verify(key));
  return {
    identify,
    caller(key) {
      const identity = identify(key);
      if (identity) return { identity };
      const workerScope = ctx.workerKeys.verify(key);
      return workerScope ? { workerScope } : errors.UNAUTHORIZED();
    },
    routeRefusal(identity, route, target, what) {
      if (identity === PLATFORM_ADMIN) return undefined;
      const rule: Rule | undefined = ROUTE_RULES[route];
      if (!rule)
        return errors.KEY_FORBIDDEN(
          `"${identity.name}"`,
          what,
          `a rule for ${route} in platform/keys/rules.ts (there is none: only the platform's key may call it)`,
        );
      return refusal(identity, rule, () => placeOf(ctx.store, rule.on, target), what);
    },
  };
}
