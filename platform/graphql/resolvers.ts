/**
 * Root resolvers of schema.graphql (the management API, reference section 3), assembled from one
 * file per group: apps.ts (apps, environments, deploys), endpoints.ts, builds.ts, templates.ts,
 * volumes.ts, secrets.ts, gpu-types.ts; views.ts shapes the rows.
 */
import type { PlatformContext } from "../context.ts";
import type { KeyScope } from "../worker-keys.ts";
import { gpuTypes } from "./gpu-types.ts";
import { volumeResolvers, volumeView } from "./volumes.ts";
import { secretResolvers } from "./secrets.ts";
import { appResolvers } from "./apps.ts";
import { buildResolvers } from "./builds.ts";
import { endpointResolvers, type ResolverHooks } from "./endpoints.ts";
import { templateResolvers } from "./templates.ts";
import { createViews, USER_ID } from "./views.ts";

export type { ResolverHooks } from "./endpoints.ts";

export interface Resolvers {
  [field: string]: (args: Record<string, unknown>, context?: { workerScope?: KeyScope }) => unknown;
}

export function createResolvers(ctx: PlatformContext, hooks: ResolverHooks): Resolvers {
  const { store } = ctx;
  const views = createViews(ctx);
  const endpoints = endpointResolvers(ctx, hooks, views);
  const apps = appResolvers(ctx, hooks, views);
  const secrets = secretResolvers(ctx);
  return {
    ...volumeResolvers(ctx, hooks.endpointChanged),
    ...endpoints,
    ...apps,
    ...buildResolvers(ctx, views),
    ...templateResolvers(ctx, views),
    ...secrets.mutations,
    myself: () => ({
      id: USER_ID,
      endpoints: () => store.endpoints.list().map(views.endpointView),
      endpoint: endpoints.endpoint,
      networkVolumes: () => store.volumes.list().map(volumeView),
      pubKey: null,
      apps: apps.apps,
      secrets: secrets.listSecrets,
    }),
    gpuTypes: ({ input }) => gpuTypes(input as Parameters<typeof gpuTypes>[0]),
  };
}
