/** Templates (image + env), as saveTemplate creates them. */
import type { Db } from "./db.ts";
import type { EnvVar } from "./endpoints.ts";
import { newId } from "../_ids.ts";

export interface TemplateRecord {
  id: string;
  name: string;
  imageName: string;
  env: EnvVar[];
  containerDiskInGb: number | null;
  dockerArgs: string | null;
  isServerless: boolean;
  createdAt: number;
}

export interface TemplatesRepo {
  get(id: string): TemplateRecord | undefined;
  create(t: Omit<TemplateRecord, "id" | "createdAt">): TemplateRecord;
}

export function createTemplatesRepo(db: Db): TemplatesRepo {
  const q = {
    byId: db.prepare<[string], { spec: string }>("SELECT spec FROM templates WHERE id = ?"),
    insert: db.prepare("INSERT INTO templates (id, name, spec, created_at) VALUES (?, ?, ?, ?)"),
  };
  return {
    get(id: string): TemplateRecord | undefined {
      const row = q.byId.get(id);
      return row && (JSON.parse(row.spec) as TemplateRecord);
    },
    create(t: Omit<TemplateRecord, "id" | "createdAt">): TemplateRecord {
      const row: TemplateRecord = { ...t, id: newId("tpl"), createdAt: Date.now() };
      q.insert.run(row.id, row.name, JSON.stringify(row), row.createdAt);
      return row;
    },
  };
}
