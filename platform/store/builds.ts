/** Artifacts (content-addressed blobs), pending uploads and builds. */
import type { Db } from "./db.ts";
import { newId } from "../_ids.ts";

export interface ArtifactRow {
  sha256: string;
  size: number;
  path: string;
}
export interface UploadRow {
  objectKey: string;
  appId: string;
  size: number;
  expectedSha256: string | null;
  sha256: string | null;
  tokenHash: string;
  expiresAt: number;
}
export interface BuildRow {
  id: string;
  appId: string;
  sha256: string;
  size: number;
  manifest: Record<string, unknown>;
  createdAt: number;
}

type RawUpload = {
  object_key: string;
  app_id: string;
  size: number;
  expected_sha256: string | null;
  sha256: string | null;
  token_hash: string;
  expires_at: number;
};
type RawBuild = { id: string; app_id: string; sha256: string; size: number; manifest: string; created_at: number };

const upload = (r: RawUpload): UploadRow => ({
  objectKey: r.object_key,
  appId: r.app_id,
  size: r.size,
  expectedSha256: r.expected_sha256,
  sha256: r.sha256,
  tokenHash: r.token_hash,
  expiresAt: r.expires_at,
});
const build = (r: RawBuild): BuildRow => ({
  id: r.id,
  appId: r.app_id,
  sha256: r.sha256,
  size: r.size,
  manifest: JSON.parse(r.manifest),
  createdAt: r.created_at,
});

export interface BuildsRepo {
  artifact(sha256: string): ArtifactRow | undefined;
  addArtifact(a: ArtifactRow): void;
  createUpload(u: Omit<UploadRow, "objectKey">): UploadRow;
  upload(objectKey: string): UploadRow | undefined;
  markUploaded(objectKey: string, sha256: string): void;
  pruneUploads(now: number): number;
  create(b: Omit<BuildRow, "id" | "createdAt">): BuildRow;
  get(id: string): BuildRow | undefined;
  forApp(appId: string): BuildRow[];
  setManifest(id: string, manifest: Record<string, unknown>): void;
  remove(id: string): void;
}

export function createBuildsRepo(db: Db): BuildsRepo {
  const q = {
    artifact: db.prepare<[string], ArtifactRow>("SELECT sha256, size, path FROM artifacts WHERE sha256 = ?"),
    artifactInsert: db.prepare("INSERT INTO artifacts (sha256, size, path, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (sha256) DO NOTHING"),
    uploadInsert: db.prepare(
      "INSERT INTO uploads (object_key, app_id, size, expected_sha256, sha256, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    ),
    upload: db.prepare<[string], RawUpload>("SELECT * FROM uploads WHERE object_key = ?"),
    uploadDone: db.prepare("UPDATE uploads SET sha256 = ? WHERE object_key = ?"),
    uploadsExpired: db.prepare("DELETE FROM uploads WHERE expires_at < ?"),
    insert: db.prepare("INSERT INTO builds (id, app_id, sha256, size, manifest, created_at) VALUES (?, ?, ?, ?, ?, ?)"),
    byId: db.prepare<[string], RawBuild>("SELECT * FROM builds WHERE id = ?"),
    byApp: db.prepare<[string], RawBuild>("SELECT * FROM builds WHERE app_id = ? ORDER BY created_at"),
    setManifest: db.prepare("UPDATE builds SET manifest = ? WHERE id = ?"),
    remove: db.prepare("DELETE FROM builds WHERE id = ?"),
  };
  return {
    artifact: (sha256: string): ArtifactRow | undefined => q.artifact.get(sha256),
    addArtifact: (a: ArtifactRow): void => void q.artifactInsert.run(a.sha256, a.size, a.path, Date.now()),
    createUpload(u: Omit<UploadRow, "objectKey">): UploadRow {
      const row = { ...u, objectKey: newId("up", 20) };
      q.uploadInsert.run(row.objectKey, row.appId, row.size, row.expectedSha256, row.sha256, row.tokenHash, Date.now(), row.expiresAt);
      return row;
    },
    upload: (objectKey: string): UploadRow | undefined => {
      const r = q.upload.get(objectKey);
      return r && upload(r);
    },
    markUploaded: (objectKey: string, sha256: string): void => void q.uploadDone.run(sha256, objectKey),
    pruneUploads: (now: number): number => q.uploadsExpired.run(now).changes,
    create(b: Omit<BuildRow, "id" | "createdAt">): BuildRow {
      const row: BuildRow = { ...b, id: newId("bld"), createdAt: Date.now() };
      q.insert.run(row.id, row.appId, row.sha256, row.size, JSON.stringify(row.manifest), row.createdAt);
      return row;
    },
    get: (id: string): BuildRow | undefined => {
      const r = q.byId.get(id);
      return r && build(r);
    },
    forApp: (appId: string): BuildRow[] => q.byApp.all(appId).map(build),
    setManifest: (id: string, manifest: Record<string, unknown>): void => void q.setManifest.run(JSON.stringify(manifest), id),
    remove: (id: string): void => void q.remove.run(id),
  };
}
