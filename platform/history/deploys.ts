/**
 * Deploy history: each switch of an environment to a build (a deploy or a rollback) is recorded with
 * who made it, the build's git commit, what it changed, and the endpoints' settings it left live —
 * what a rollback to it stages again, so an endpoint a later build removed comes back as it was.
 * The newest `retention` entries of each environment are kept; a build no kept entry, environment
 * or endpoint refers to any more is deleted with its unpacked folder (volumes and secrets are never
 * part of a build). docs/platform.md, "History and rollback".
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { errors } from "../../core/errors.ts";
import type { BuildRow, DeployRow, EndpointChanges, EndpointRecord, EnvironmentRow, GitSource, Store } from "../store/index.ts";

const manifestEndpoints = (build: BuildRow | undefined) => (build?.manifest.endpoints ?? {}) as Record<string, unknown>;

/** Endpoint names the switch added, changed (settings or manifest entry) and removed. */
export function endpointChanges(before: EndpointRecord[], after: EndpointRecord[], from: BuildRow | undefined, to: BuildRow): EndpointChanges {
  const old = new Map(before.map((e) => [e.name, e]));
  const now = new Map(after.map((e) => [e.name, e]));
  const entry = (build: BuildRow | undefined, name: string) => JSON.stringify(manifestEndpoints(build)[name] ?? null);
  const differs = (a: EndpointRecord, b: EndpointRecord) => JSON.stringify(a) !== JSON.stringify(b) || entry(from, a.name) !== entry(to, b.name);
  return {
    added: [...now.keys()].filter((name) => !old.has(name)).sort(),
    changed: [...now.keys()].filter((name) => old.has(name) && differs(old.get(name)!, now.get(name)!)).sort(),
    removed: [...old.keys()].filter((name) => !now.has(name)).sort(),
  };
}

/** The build manifest's `git` (svc:upload adds it when the app is in a git repository). */
function gitOf(build: BuildRow): GitSource | null {
  const git = build.manifest.git as { commit?: unknown; dirty?: unknown } | undefined;
  return git && typeof git.commit === "string" ? { commit: git.commit, dirty: git.dirty === true } : null;
}

export interface SwitchRecord {
  env: EnvironmentRow;
  build: BuildRow;
  /** The build that was active before (undefined on a first deploy). */
  from: BuildRow | undefined;
  kind: DeployRow["kind"];
  keyName: string;
  before: EndpointRecord[];
}

/**
 * Does the build have this endpoint, by name (or a prefixed name: `<prefix>-<name>`)? Stricter than
 * the switch, which keeps any endpoint running a one-endpoint build: the deploy deletes those the
 * manifest lacks right after it, and the history records the environment as the deploy leaves it.
 */
const inBuild = (build: BuildRow, name: string) => Object.keys(manifestEndpoints(build)).some((n) => name === n || name.endsWith(`-${n}`));

/** Records a switch once it committed, then applies the retention. */
export function recordSwitch(store: Store, dataDir: string, retention: number, s: SwitchRecord): DeployRow {
  const after = store.endpoints.list().filter((e) => e.environmentId === s.env.id && inBuild(s.build, e.name));
  const row = store.history.add({
    environmentId: s.env.id,
    buildId: s.build.id,
    kind: s.kind,
    keyName: s.keyName,
    at: Date.now(),
    git: gitOf(s.build),
    changes: endpointChanges(s.before, after, s.from, s.build),
    endpoints: after,
  });
  for (const buildId of new Set(store.history.trim(s.env.id, retention))) pruneBuild(store, dataDir, buildId);
  return row;
}

/** Deletes a build nothing refers to any more: no kept history entry, no environment's active build, no endpoint. */
function pruneBuild(store: Store, dataDir: string, buildId: string): void {
  if (store.history.refersTo(buildId)) return;
  if (store.endpoints.list().some((e) => e.buildId === buildId)) return;
  const build = store.builds.get(buildId);
  if (!build || store.apps.environments(build.appId).some((e) => e.activeBuildId === buildId)) return;
  store.builds.remove(buildId);
  void rm(join(dataDir, "builds", buildId), { recursive: true, force: true });
}

/** The history entry a rollback returns to: `to` (a build id), else the newest entry of another build than the active one. */
export function rollbackTarget(store: Store, env: EnvironmentRow, to: string | undefined): DeployRow {
  const history = store.history.forEnvironment(env.id);
  const target = to ? history.find((d) => d.buildId === to) : history.find((d) => d.buildId !== env.activeBuildId);
  if (target && store.builds.get(target.buildId)) return target;
  const kept = [...new Set(history.map((d) => d.buildId))].join(", ") || "none";
  if (to) throw errors.NOT_FOUND("Build", to, `\`svc history\` lists the builds kept for rollback in environment ${env.name} (${kept}).`);
  throw errors.BAD_REQUEST(`Environment ${env.name} has no earlier build to roll back to (builds kept: ${kept}).`);
}
