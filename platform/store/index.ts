/** The platform's store: one SQLite database, one repository per table family. */
import { openDb, type Db } from "./db.ts";
import { createMetaRepo, type MetaRepo } from "./meta.ts";
import { createAppsRepo, type AppsRepo } from "./apps.ts";
import { createBuildsRepo, type BuildsRepo } from "./builds.ts";
import { createEndpointsRepo, type EndpointsRepo } from "./endpoints.ts";
import { createTemplatesRepo, type TemplatesRepo } from "./templates.ts";
import { createJobsRepo, type JobsRepo } from "./jobs.ts";
import { createWorkersRepo, type WorkersRepo } from "./workers.ts";
import { createFilesRepo, type FilesRepo } from "./files.ts";
import { createLogsRepo, DEFAULT_LOG_CHARS, type LogsRepo } from "./logs.ts";
import { createVolumesRepo, type VolumesRepo } from "./volumes.ts";
import { createSecretsRepo, type SecretsRepo } from "./secrets.ts";
import { createSchedulesRepo, type SchedulesRepo } from "./schedules.ts";
import { createKeysRepo, type KeysRepo } from "./keys.ts";
import { createHistoryRepo, type HistoryRepo } from "./history.ts";
import { createAuditRepo, type AuditRepo } from "./audit.ts";
import { startCheckpointer } from "./checkpointer.ts";

export type { EndpointRecord, EnvVar } from "./endpoints.ts";
export type { TemplateRecord } from "./templates.ts";
export type { AppRow, EnvironmentRow } from "./apps.ts";
export type { BuildRow, UploadRow, ArtifactRow } from "./builds.ts";
export type { JobRow, JobStatus, JobKind, NewJob, RecentJob } from "./jobs.ts";
export type { FileRecord } from "./files.ts";
export type { VolumeRecord, ObjectRecord, UploadRecord } from "./volumes.ts";
export type { ScheduleState } from "./schedules.ts";
export type { KeyRow } from "./keys.ts";
export type { DeployRow, EndpointChanges, GitSource } from "./history.ts";
export type { AuditRow } from "./audit.ts";

export interface Store {
  db: Db;
  meta: MetaRepo;
  apps: AppsRepo;
  builds: BuildsRepo;
  endpoints: EndpointsRepo;
  templates: TemplatesRepo;
  jobs: JobsRepo;
  workers: WorkersRepo;
  files: FilesRepo;
  logs: LogsRepo;
  volumes: VolumesRepo;
  secrets: SecretsRepo;
  schedules: SchedulesRepo;
  keys: KeysRepo;
  history: HistoryRepo;
  audit: AuditRepo;
  /** Commits the held writes (jobs, log lines), stops the checkpointer and closes the database. */
  close(): void;
}

export function createStore(
  file: string,
  options: { logLinesPerEndpoint?: number; logCharsPerEndpoint?: number; onError?: (error: unknown) => void } = {},
): Store {
  const db: Db = openDb(file);
  const onError = options.onError ?? ((error: unknown) => console.error(error));
  const checkpointer = file === ":memory:" ? undefined : startCheckpointer(db, file, onError);
  return {
    db,
    meta: createMetaRepo(db),
    apps: createAppsRepo(db),
    builds: createBuildsRepo(db),
    endpoints: createEndpointsRepo(db),
    templates: createTemplatesRepo(db),
    jobs: createJobsRepo(db, onError),
    workers: createWorkersRepo(db),
    files: createFilesRepo(db),
    logs: createLogsRepo(db, { lines: options.logLinesPerEndpoint ?? 5000, chars: options.logCharsPerEndpoint ?? DEFAULT_LOG_CHARS }),
    volumes: createVolumesRepo(db),
    secrets: createSecretsRepo(db),
    schedules: createSchedulesRepo(db),
    keys: createKeysRepo(db),
    history: createHistoryRepo(db),
    audit: createAuditRepo(db),
    close(): void {
      checkpointer?.stop();
      this.logs.close();
      try {
        this.jobs.flush();
        this.logs.flush();
      } finally {
        db.close();
      }
    },
  };
}
