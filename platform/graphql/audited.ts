/**
 * The audited mutations (../history/audit.ts AUDITED): each call is recorded once, with the key that
 * made it, the app and what it acted on (read before the action: a deleted thing has no name after),
 * and its outcome.
 */
import type { PlatformContext } from "../context.ts";
import { AUDITED } from "../history/audit.ts";
import { placeOf, type Identity } from "../keys/access.ts";
import { GRAPHQL_RULES } from "../keys/rules.ts";
import type { Store } from "../store/index.ts";
import type { KeyScope } from "../worker-keys.ts";

type Resolvers = Record<string, (args: Record<string, unknown>, context?: { identity?: Identity; workerScope?: KeyScope }) => unknown>;

const text = (value: unknown): string | undefined => (typeof value === "string" && value ? value : undefined);

/** What the mutation acts on, by name where there is one. */
function targetOf(store: Store, field: string, args: Record<string, unknown>): string | undefined {
  const input = (args.input ?? {}) as Record<string, unknown>;
  const env = (id: unknown) => store.apps.environment(String(id))?.name;
  switch (field) {
    case "deployBuildToEnvironment":
      return `${env(args.environmentId) ?? args.environmentId} ← ${args.buildId}`;
    case "rollbackEnvironment":
      return `${env(args.environmentId) ?? args.environmentId}${text(args.buildId) ? ` → ${args.buildId}` : ""}`;
    case "deleteEndpoint":
      return store.endpoints.get(String(args.id))?.name ?? text(args.id);
    case "deleteEnvironment":
      return env(args.id) ?? text(args.id);
    case "deleteApp":
      return store.apps.get(String(args.id))?.name ?? text(args.id);
    case "deleteNetworkVolume":
      return store.volumes.get(String(input.id))?.name ?? text(input.id);
    default:
      return text(args.name) ?? text(input.name);
  }
}

/** `resolvers` with each audited mutation wrapped to record its calls. */
export function audited<R extends Resolvers>(ctx: PlatformContext, resolvers: R): R {
  const out: Resolvers = { ...resolvers };
  for (const [field, action] of Object.entries(AUDITED)) {
    const resolve = resolvers[field];
    if (!resolve) continue;
    out[field] = (args, context) => {
      const rule = GRAPHQL_RULES[`Mutation.${field}`];
      const app = rule?.arg ? placeOf(ctx.store, rule.on, args[rule.arg])?.app : undefined;
      const keyName = context?.identity?.name ?? "platform";
      return ctx.audit.around({ keyName, action, app, target: targetOf(ctx.store, field, args) }, () => resolve(args, context));
    };
  }
  return out as R;
}
