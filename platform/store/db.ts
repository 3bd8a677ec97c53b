/** Opens the platform's SQLite database (WAL) and creates its tables. */
import Database from "better-sqlite3";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";

export type Db = Database.Database;

const SCHEMA_VERSION = 1;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS apps (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS environments (
  id TEXT PRIMARY KEY, app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE, name TEXT NOT NULL,
  active_build_id TEXT, created_at INTEGER NOT NULL, UNIQUE (app_id, name));
CREATE TABLE IF NOT EXISTS artifacts (sha256 TEXT PRIMARY KEY, size INTEGER NOT NULL, path TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS uploads (
  object_key TEXT PRIMARY KEY, app_id TEXT NOT NULL, size INTEGER NOT NULL, expected_sha256 TEXT,
  sha256 TEXT, token_hash TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS builds (
  id TEXT PRIMARY KEY, app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE, sha256 TEXT NOT NULL,
  size INTEGER NOT NULL, manifest TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS templates (id TEXT PRIMARY KEY, name TEXT NOT NULL, spec TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS endpoints (id TEXT PRIMARY KEY, name TEXT NOT NULL, spec TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS staged_endpoints (
  environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE, endpoint_id TEXT NOT NULL,
  build_id TEXT NOT NULL REFERENCES builds(id) ON DELETE CASCADE, spec TEXT NOT NULL, PRIMARY KEY (environment_id, endpoint_id));
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY, endpoint_id TEXT NOT NULL, status TEXT NOT NULL, kind TEXT NOT NULL,
  input TEXT NOT NULL, output TEXT, error TEXT, error_type TEXT, webhook TEXT,
  execution_timeout_ms INTEGER NOT NULL, ttl_ms INTEGER NOT NULL, low_priority INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL, started_at INTEGER, finished_at INTEGER, worker_id TEXT,
  retries INTEGER NOT NULL DEFAULT 0, handbacks INTEGER NOT NULL DEFAULT 0,
  prune_at INTEGER, has_stream INTEGER NOT NULL DEFAULT 0, stream_cursor INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS jobs_active ON jobs (status) WHERE status IN ('IN_QUEUE', 'IN_PROGRESS');
CREATE INDEX IF NOT EXISTS jobs_prune ON jobs (prune_at) WHERE prune_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_endpoint ON jobs (endpoint_id);
CREATE TABLE IF NOT EXISTS job_stream (job_id TEXT NOT NULL, seq INTEGER NOT NULL, chunk TEXT NOT NULL, PRIMARY KEY (job_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS workers (
  id TEXT PRIMARY KEY, endpoint_id TEXT NOT NULL, build_id TEXT, pid INTEGER, started_at INTEGER NOT NULL, stopped_at INTEGER);
CREATE INDEX IF NOT EXISTS workers_live ON workers (stopped_at) WHERE stopped_at IS NULL;
CREATE TABLE IF NOT EXISTS files (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, content_type TEXT NOT NULL, size INTEGER NOT NULL, path TEXT NOT NULL,
  endpoint_id TEXT, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS files_expiry ON files (expires_at);
CREATE TABLE IF NOT EXISTS worker_logs (
  id INTEGER PRIMARY KEY AUTOINCREMENT, endpoint_id TEXT NOT NULL, worker_id TEXT NOT NULL, ts INTEGER NOT NULL, line TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS worker_logs_endpoint ON worker_logs (endpoint_id, id);
CREATE TABLE IF NOT EXISTS volumes (
  id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, size_gb INTEGER NOT NULL, data_center_id TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS volume_objects (
  volume_id TEXT NOT NULL REFERENCES volumes(id) ON DELETE CASCADE, key TEXT NOT NULL, size INTEGER NOT NULL,
  mtime_ms INTEGER NOT NULL, etag TEXT NOT NULL, checksum TEXT, content_type TEXT, PRIMARY KEY (volume_id, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS volume_uploads (
  id TEXT PRIMARY KEY, volume_id TEXT NOT NULL REFERENCES volumes(id) ON DELETE CASCADE, key TEXT NOT NULL,
  checksum_algorithm TEXT, content_type TEXT, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS schedules (
  endpoint_id TEXT PRIMARY KEY, last_slot INTEGER NOT NULL, last_job_id TEXT, last_run_at INTEGER, skipped INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS secrets (
  id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, iv BLOB NOT NULL, tag BLOB NOT NULL, ciphertext BLOB NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS api_keys (
  name TEXT PRIMARY KEY, id TEXT NOT NULL UNIQUE, role TEXT NOT NULL, app TEXT, env TEXT, salt BLOB NOT NULL, hash BLOB NOT NULL,
  created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS deploys (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  build_id TEXT NOT NULL, kind TEXT NOT NULL, key_name TEXT NOT NULL, at INTEGER NOT NULL, git TEXT, changes TEXT NOT NULL,
  endpoints TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS deploys_environment ON deploys (environment_id, seq);
CREATE TABLE IF NOT EXISTS audit (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, key_name TEXT NOT NULL, action TEXT NOT NULL, app TEXT,
  target TEXT, outcome TEXT NOT NULL);
`;

export function openDb(file: string): Db {
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  // NORMAL in WAL mode: a commit survives the process being killed (not a power loss), with no fsync per job.
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  db.pragma("temp_store = MEMORY");
  db.exec(SCHEMA);
  db.prepare("INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO NOTHING").run(String(SCHEMA_VERSION));
  return db;
}
