/** Resolvers of apps and environments, and the deploy's switch of an environment to a build (docs/platform.md). */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import type { EndpointRecord } from "../store/index.ts";
import { manifestEndpointFor } from "../workers/target.ts";
import { nameSchema, parseInput } from "./inputs.ts";
import { mustApp, mustBuild, mustEnvironment } from "./_lookup.ts";
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
    deployBuildToEnvironment: ({ environmentId, buildId }: Record<string, unknown>) => {
      const env = mustEnvironment(store, String(environmentId));
      const build = mustBuild(store, String(buildId));
      if (build.appId !== env.appId) throw errors.BAD_REQUEST(`Build ${build.id} belongs to another app than environment ${env.name}.`);
      // The one committed step of a deploy (docs/platform.md, "Deploys switch in one step"): the
      // build, the settings staged for it, and the retirement of the endpoints it does not have.
      const names = (build.manifest.endpoints ?? {}) as Record<string, { name?: string }>;
      const runs = (e: EndpointRecord) => manifestEndpointFor(e.name, names) !== undefined;
      const next = new Map(
        store.endpoints
          .list()
          .filter((e) => e.environmentId === env.id)
          .map((e) => [e.id, e]),
      );
      for (const e of store.endpoints.staged(env.id, build.id)) next.set(e.id, e);
      const apply = [...next.values()].filter((e) => runs(e) && e !== store.endpoints.get(e.id));
      const retire = [...next.values()].filter((e) => !runs(e) && store.endpoints.get(e.id));
      for (const e of retire) store.logs.retire(e);
      store.endpoints.switchBuild(
        env.id,
        build.id,
        apply,
        retire.map((e) => e.id),
      );
      for (const e of retire) void hooks.endpointRemoved(e.id);
      for (const e of store.endpoints.list()) if (e.environmentId === env.id) hooks.endpointChanged(e.id);
      return views.environmentView(store.apps.environment(env.id)!);
    },
  };
}
