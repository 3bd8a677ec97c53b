/**
 * Root resolvers of schema.graphql (the management API, reference section 3), assembled from one
 * file per group: apps.ts (apps, environments), deploys.ts (the switch, rollback, history),
 * endpoints.ts, builds.ts, templates.ts, volumes.ts, secrets.ts, keys.ts, gpu-types.ts; views.ts
 * shapes the rows. Who may call which field is checked before they run (api/graphql-access.ts);
 * lists answer only what the caller's key reaches, and audited.ts records the management actions.
 */
import type { PlatformContext } from "../context.ts";
import { placeOf, reaches, type Identity } from "../keys/access.ts";
import type { KeyScope } from "../worker-keys.ts";
import { gpuTypes } from "./gpu-types.ts";
import { volumeResolvers, volumeView } from "./volumes.ts";
import { secretResolvers } from "./secrets.ts";
import { appResolvers } from "./apps.ts";
import { deployResolvers } from "./deploys.ts";
import { buildResolvers } from "./builds.ts";
import { endpointResolvers, type ResolverHooks } from "./endpoints.ts";
import { templateResolvers } from "./templates.ts";
import { keyResolvers } from "./keys.ts";
import { audited } from "./audited.ts";
import { createViews, USER_ID } from "./views.ts";

export type { ResolverHooks } from "./endpoints.ts";

export interface ResolverContext {
  workerScope?: KeyScope;
  /** The named key or the platform's key that made the call. */
  identity?: Identity;
}

export interface Resolvers {
  [field: string]: (args: Record<string, unknown>, context?: ResolverContext) => unknown;
}

export function createResolvers(ctx: PlatformContext, hooks: ResolverHooks): Resolvers {
  const { store } = ctx;
  const views = createViews(ctx);
  const endpoints = endpointResolvers(ctx, hooks, views);
  const apps = appResolvers(ctx, hooks, views);
  const secrets = secretResolvers(ctx);
  /** Keeps the items the caller's key reaches (a platform-wide key: all). */
  const visible = <T>(context: ResolverContext | undefined, items: T[], on: "endpoint" | "app-name" | "environment", id: (item: T) => unknown) => {
    const who = context?.identity;
    return who?.app ? items.filter((item) => reaches(who, placeOf(store, on, id(item)))) : items;
  };
  return audited(ctx, {
    ...volumeResolvers(ctx, hooks.endpointChanged),
    ...endpoints,
    endpoint: (args, context) => (visible(context, [String(args.id)], "endpoint", (id) => id).length ? endpoints.endpoint(args) : null),
    deletedEndpoints: (args, context) => visible(context, endpoints.deletedEndpoints(args), "environment", (e) => e.environmentId ?? undefined),
    ...apps,
    apps: (_args, context) => visible(context, apps.apps(), "app-name", (app) => app.name),
    ...deployResolvers(ctx, hooks, views),
    ...buildResolvers(ctx, views),
    ...templateResolvers(ctx, views),
    ...secrets.mutations,
    ...keyResolvers(ctx),
    myself: (_args, context) => ({
      id: USER_ID,
      endpoints: () => visible(context, store.endpoints.list(), "endpoint", (e) => e.id).map(views.endpointView),
      endpoint: (args: Record<string, unknown>) => (visible(context, [String(args.id)], "endpoint", (id) => id).length ? endpoints.endpoint(args) : null),
      networkVolumes: () => store.volumes.list().map(volumeView),
      pubKey: null,
      apps: () => visible(context, apps.apps(), "app-name", (app) => app.name),
      secrets: secrets.listSecrets,
    }),
    gpuTypes: ({ input }) => gpuTypes(input as Parameters<typeof gpuTypes>[0]),
  });
}
