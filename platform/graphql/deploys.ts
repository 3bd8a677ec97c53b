/**
 * The deploy's switch of an environment to a build (deployBuildToEnvironment), the rollback through
 * the very same switch (rollbackEnvironment: the settings the older build ran with are staged for it
 * first), and the environment's history (deployHistory). docs/platform.md, "Deploys switch in one
 * step" and "History and rollback".
 */
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import { recordSwitch, rollbackTarget } from "../history/deploys.ts";
import type { Identity } from "../keys/access.ts";
import type { BuildRow, DeployRow, EndpointRecord, EnvironmentRow } from "../store/index.ts";
import { manifestEndpointFor } from "../workers/target.ts";
import { mustBuild, mustEnvironment } from "./_lookup.ts";
import type { ResolverHooks } from "./endpoints.ts";
import { iso, type Views } from "./views.ts";

type Context = { identity?: Identity } | undefined;
const keyName = (context: Context) => context?.identity?.name ?? "platform";

export function deployResolvers(ctx: PlatformContext, hooks: ResolverHooks, views: Views) {
  const { store } = ctx;

  /** The one committed step of a deploy or a rollback; recorded in the environment's history once it committed. */
  const switchTo = (env: EnvironmentRow, build: BuildRow, kind: DeployRow["kind"], context: Context): DeployRow => {
    if (build.appId !== env.appId) throw errors.BAD_REQUEST(`Build ${build.id} belongs to another app than environment ${env.name}.`);
    const names = (build.manifest.endpoints ?? {}) as Record<string, { name?: string }>;
    const runs = (e: EndpointRecord) => manifestEndpointFor(e.name, names) !== undefined;
    const before = store.endpoints.list().filter((e) => e.environmentId === env.id);
    // the build, the settings staged for it, and the retirement of the endpoints it does not have
    const next = new Map(before.map((e) => [e.id, e]));
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
    const from = env.activeBuildId ? store.builds.get(env.activeBuildId) : undefined;
    return recordSwitch(store, ctx.options.dataDir, ctx.options.historyRetention, { env, build, from, kind, keyName: keyName(context), before });
  };

  const deployView = (env: EnvironmentRow) => (d: DeployRow) => ({
    buildId: d.buildId,
    kind: d.kind,
    keyName: d.keyName,
    at: iso(d.at),
    gitCommit: d.git?.commit ?? null,
    gitDirty: d.git ? d.git.dirty : null,
    changes: d.changes,
    active: d.buildId === env.activeBuildId,
  });

  return {
    deployBuildToEnvironment: ({ environmentId, buildId }: Record<string, unknown>, context: Context) => {
      const env = mustEnvironment(store, String(environmentId));
      switchTo(env, mustBuild(store, String(buildId)), "deploy", context);
      return views.environmentView(store.apps.environment(env.id)!);
    },
    rollbackEnvironment: ({ environmentId, buildId }: Record<string, unknown>, context: Context) => {
      const env = mustEnvironment(store, String(environmentId));
      const target = rollbackTarget(store, env, typeof buildId === "string" && buildId ? buildId : undefined);
      // the older build's endpoints as they were: staged for it, applied by the switch (and re-created when a later build removed them)
      for (const e of target.endpoints) store.endpoints.stage(env.id, target.buildId, e);
      const done = switchTo(env, mustBuild(store, target.buildId), "rollback", context);
      return { environment: views.environmentView(store.apps.environment(env.id)!), from: env.activeBuildId, to: target.buildId, changes: done.changes };
    },
    deployHistory: ({ environmentId }: Record<string, unknown>) => {
      const env = mustEnvironment(store, String(environmentId));
      return store.history.forEnvironment(env.id).map(deployView(env));
    },
  };
}
