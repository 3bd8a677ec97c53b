/** Resolvers of apps and environments (the deploy's switch is in deploys.ts). */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import { nameSchema, parseInput } from "./inputs.ts";
import { mustApp } from "./_lookup.ts";
import { removeEndpoint, type ResolverHooks } from "./endpoints.ts";
import type { Views } from "./views.ts";

export function appResolvers(ctx: PlatformContext, hooks: ResolverHooks, views: Views) {
  const { store } = ctx;
  return {
    apps: () => store.apps.list().map(views.appView),
    app: ({ name }: Record<string, unknown>) => {
      const app = store.apps.byName(String(name));
      return app ? views.appView(app) : null;
    },
    environment: ({ appId, name }: Record<string, unknown>) => {
      const env = store.apps.environmentByName(String(appId), String(name));
      return env ? views.environmentView(env) : null;
    },
    createApp: ({ name }: Record<string, unknown>) => {
      const n = parseInput(nameSchema, name, "app name");
      if (store.apps.byName(n)) throw errors.BAD_REQUEST(`App "${n}" already exists.`);
      return views.appView(store.apps.create(n));
    },
    deleteApp: async ({ id }: Record<string, unknown>) => {
      const app = store.apps.get(String(id));
      if (!app) return false;
      const envIds = new Set(store.apps.environments(app.id).map((e) => e.id));
      const builds = store.builds.forApp(app.id);
      const buildIds = new Set(builds.map((b) => b.id));
      for (const e of store.endpoints.list()) {
        if ((e.environmentId && envIds.has(e.environmentId)) || (e.buildId && buildIds.has(e.buildId))) await removeEndpoint(ctx, hooks, e.id);
      }
      store.apps.remove(app.id);
      for (const b of builds) await rm(join(ctx.options.dataDir, "builds", b.id), { recursive: true, force: true });
      return true;
    },
    createEnvironment: ({ appId, name }: Record<string, unknown>) => {
      const app = mustApp(store, String(appId));
      const n = parseInput(nameSchema, name, "environment name");
      if (store.apps.environmentByName(app.id, n)) throw errors.BAD_REQUEST(`Environment "${n}" already exists in app "${app.name}".`);
      return views.environmentView(store.apps.createEnvironment(app.id, n));
    },
    deleteEnvironment: async ({ id }: Record<string, unknown>) => {
      const env = store.apps.environment(String(id));
      if (!env) return false;
      for (const e of store.endpoints.list()) if (e.environmentId === env.id) await removeEndpoint(ctx, hooks, e.id);
      return store.apps.removeEnvironment(env.id);
    },
  };
}
