/**
 * Network volumes (docs/volumes.md): the volume rows, what the S3 API knows of each object written
 * through it (ETag, checksum, type), and the multipart uploads in progress. The bytes live in
 * `<state>/volumes/<id>/`; a file a worker wrote there has no row and gets a derived ETag.
 */
import type { Db } from "./db.ts";

export interface VolumeRecord {
  id: string;
  name: string;
  sizeGb: number;
  dataCenterId: string;
  createdAt: number;
}
/** What PutObject / CompleteMultipartUpload recorded of an object; valid while the file's size and mtime match. */
export interface ObjectRecord {
  key: string;
  size: number;
  mtimeMs: number;
  etag: string;
  checksum: string | null;
  contentType: string | null;
}
export interface UploadRecord {
  id: string;
  volumeId: string;
  key: string;
  checksumAlgorithm: string | null;
  contentType: string | null;
  createdAt: number;
}

type RawVolume = { id: string; name: string; size_gb: number; data_center_id: string; created_at: number };
type RawObject = { key: string; size: number; mtime_ms: number; etag: string; checksum: string | null; content_type: string | null };
type RawUpload = { id: string; volume_id: string; key: string; checksum_algorithm: string | null; content_type: string | null; created_at: number };

const volume = (r: RawVolume): VolumeRecord => ({ id: r.id, name: r.name, sizeGb: r.size_gb, dataCenterId: r.data_center_id, createdAt: r.created_at });
const object = (r: RawObject): ObjectRecord => ({
  key: r.key,
  size: r.size,
  mtimeMs: r.mtime_ms,
  etag: r.etag,
  checksum: r.checksum,
  contentType: r.content_type,
});
const upload = (r: RawUpload): UploadRecord => ({
  id: r.id,
  volumeId: r.volume_id,
  key: r.key,
  checksumAlgorithm: r.checksum_algorithm,
  contentType: r.content_type,
  createdAt: r.created_at,
});

export interface VolumesRepo {
  list(): VolumeRecord[];
  get(id: string): VolumeRecord | undefined;
  byName(name: string): VolumeRecord | undefined;
  create(v: VolumeRecord): VolumeRecord;
  update(id: string, name: string, sizeGb: number): void;
  remove(id: string): boolean;
  object(volumeId: string, key: string): ObjectRecord | undefined;
  putObject(volumeId: string, o: ObjectRecord): void;
  removeObject(volumeId: string, key: string): void;
  createUpload(u: UploadRecord): UploadRecord;
  upload(id: string): UploadRecord | undefined;
  uploads(volumeId: string): UploadRecord[];
  startedBefore(time: number): UploadRecord[];
  removeUpload(id: string): void;
}

export function createVolumesRepo(db: Db): VolumesRepo {
  const q = {
    all: db.prepare<[], RawVolume>("SELECT * FROM volumes ORDER BY created_at"),
    byId: db.prepare<[string], RawVolume>("SELECT * FROM volumes WHERE id = ?"),
    byName: db.prepare<[string], RawVolume>("SELECT * FROM volumes WHERE name = ?"),
    insert: db.prepare("INSERT INTO volumes (id, name, size_gb, data_center_id, created_at) VALUES (?, ?, ?, ?, ?)"),
    resize: db.prepare("UPDATE volumes SET size_gb = ?, name = ? WHERE id = ?"),
    remove: db.prepare("DELETE FROM volumes WHERE id = ?"),
    object: db.prepare<[string, string], RawObject>(
      "SELECT key, size, mtime_ms, etag, checksum, content_type FROM volume_objects WHERE volume_id = ? AND key = ?",
    ),
    putObject: db.prepare(
      "INSERT INTO volume_objects (volume_id, key, size, mtime_ms, etag, checksum, content_type) VALUES (?, ?, ?, ?, ?, ?, ?) " +
        "ON CONFLICT (volume_id, key) DO UPDATE SET size = excluded.size, mtime_ms = excluded.mtime_ms, etag = excluded.etag, checksum = excluded.checksum, content_type = excluded.content_type",
    ),
    removeObject: db.prepare("DELETE FROM volume_objects WHERE volume_id = ? AND key = ?"),
    insertUpload: db.prepare("INSERT INTO volume_uploads (id, volume_id, key, checksum_algorithm, content_type, created_at) VALUES (?, ?, ?, ?, ?, ?)"),
    upload: db.prepare<[string], RawUpload>("SELECT * FROM volume_uploads WHERE id = ?"),
    uploads: db.prepare<[string], RawUpload>("SELECT * FROM volume_uploads WHERE volume_id = ? ORDER BY key, created_at"),
    staleUploads: db.prepare<[number], RawUpload>("SELECT * FROM volume_uploads WHERE created_at < ? LIMIT 1000"),
    removeUpload: db.prepare("DELETE FROM volume_uploads WHERE id = ?"),
  };
  return {
    list: (): VolumeRecord[] => q.all.all().map(volume),
    get: (id: string): VolumeRecord | undefined => {
      const r = q.byId.get(id);
      return r && volume(r);
    },
    byName: (name: string): VolumeRecord | undefined => {
      const r = q.byName.get(name);
      return r && volume(r);
    },
    create: (v: VolumeRecord): VolumeRecord => {
      q.insert.run(v.id, v.name, v.sizeGb, v.dataCenterId, v.createdAt);
      return v;
    },
    update: (id: string, name: string, sizeGb: number): void => void q.resize.run(sizeGb, name, id),
    remove: (id: string): boolean => q.remove.run(id).changes > 0,
    object: (volumeId: string, key: string): ObjectRecord | undefined => {
      const r = q.object.get(volumeId, key);
      return r && object(r);
    },
    putObject: (volumeId: string, o: ObjectRecord): void => void q.putObject.run(volumeId, o.key, o.size, o.mtimeMs, o.etag, o.checksum, o.contentType),
    removeObject: (volumeId: string, key: string): void => void q.removeObject.run(volumeId, key),
    createUpload: (u: UploadRecord): UploadRecord => {
      q.insertUpload.run(u.id, u.volumeId, u.key, u.checksumAlgorithm, u.contentType, u.createdAt);
      return u;
    },
    upload: (id: string): UploadRecord | undefined => {
      const r = q.upload.get(id);
      return r && upload(r);
    },
    uploads: (volumeId: string): UploadRecord[] => q.uploads.all(volumeId).map(upload),
    startedBefore: (time: number): UploadRecord[] => q.staleUploads.all(time).map(upload),
    removeUpload: (id: string): void => void q.removeUpload.run(id),
  };
}
