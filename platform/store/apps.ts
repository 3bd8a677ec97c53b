/** Apps and their environments. */
import type { Db } from "./db.ts";
import { newId } from "../_ids.ts";

export interface AppRow {
  id: string;
  name: string;
  createdAt: number;
}
export interface EnvironmentRow {
  id: string;
  appId: string;
  name: string;
  activeBuildId: string | null;
  createdAt: number;
}

type RawApp = { id: string; name: string; created_at: number };
type RawEnv = { id: string; app_id: string; name: string; active_build_id: string | null; created_at: number };

const app = (r: RawApp): AppRow => ({ id: r.id, name: r.name, createdAt: r.created_at });
const env = (r: RawEnv): EnvironmentRow => ({ id: r.id, appId: r.app_id, name: r.name, activeBuildId: r.active_build_id, createdAt: r.created_at });

export interface AppsRepo {
  list(): AppRow[];
  get(id: string): AppRow | undefined;
  byName(name: string): AppRow | undefined;
  create(name: string): AppRow;
  remove(id: string): boolean;
  environments(appId: string): EnvironmentRow[];
  environment(id: string): EnvironmentRow | undefined;
  environmentByName(appId: string, name: string): EnvironmentRow | undefined;
  createEnvironment(appId: string, name: string): EnvironmentRow;
  removeEnvironment(id: string): boolean;
  setActiveBuild(envId: string, buildId: string): void;
}

export function createAppsRepo(db: Db): AppsRepo {
  const q = {
    list: db.prepare<[], RawApp>("SELECT * FROM apps ORDER BY created_at, name"),
    byId: db.prepare<[string], RawApp>("SELECT * FROM apps WHERE id = ?"),
    byName: db.prepare<[string], RawApp>("SELECT * FROM apps WHERE name = ?"),
    insert: db.prepare("INSERT INTO apps (id, name, created_at) VALUES (?, ?, ?)"),
    remove: db.prepare("DELETE FROM apps WHERE id = ?"),
    envList: db.prepare<[string], RawEnv>("SELECT * FROM environments WHERE app_id = ? ORDER BY created_at, name"),
    envById: db.prepare<[string], RawEnv>("SELECT * FROM environments WHERE id = ?"),
    envByName: db.prepare<[string, string], RawEnv>("SELECT * FROM environments WHERE app_id = ? AND name = ?"),
    envInsert: db.prepare("INSERT INTO environments (id, app_id, name, active_build_id, created_at) VALUES (?, ?, ?, NULL, ?)"),
    envRemove: db.prepare("DELETE FROM environments WHERE id = ?"),
    envSetBuild: db.prepare("UPDATE environments SET active_build_id = ? WHERE id = ?"),
  };
  return {
    list: (): AppRow[] => q.list.all().map(app),
    get: (id: string): AppRow | undefined => {
      const r = q.byId.get(id);
      return r && app(r);
    },
    byName: (name: string): AppRow | undefined => {
      const r = q.byName.get(name);
      return r && app(r);
    },
    create(name: string): AppRow {
      const row = { id: newId("app"), name, createdAt: Date.now() };
      q.insert.run(row.id, row.name, row.createdAt);
      return row;
    },
    remove: (id: string): boolean => q.remove.run(id).changes > 0,
    environments: (appId: string): EnvironmentRow[] => q.envList.all(appId).map(env),
    environment: (id: string): EnvironmentRow | undefined => {
      const r = q.envById.get(id);
      return r && env(r);
    },
    environmentByName: (appId: string, name: string): EnvironmentRow | undefined => {
      const r = q.envByName.get(appId, name);
      return r && env(r);
    },
    createEnvironment(appId: string, name: string): EnvironmentRow {
      const row = { id: newId("env"), appId, name, activeBuildId: null, createdAt: Date.now() };
      q.envInsert.run(row.id, appId, name, row.createdAt);
      return row;
    },
    removeEnvironment: (id: string): boolean => q.envRemove.run(id).changes > 0,
    setActiveBuild: (envId: string, buildId: string): void => void q.envSetBuild.run(buildId, envId),
  };
}
