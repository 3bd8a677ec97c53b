/** The platform's store: one SQLite database, one repository per table family. */
import { openDb, type Db } from "./db.ts";
import { createMetaRepo } from "./meta.ts";
import { createAppsRepo } from "./apps.ts";
import { createBuildsRepo } from "./builds.ts";
import { createEndpointsRepo } from "./endpoints.ts";
import { createTemplatesRepo } from "./templates.ts";
import { createJobsRepo } from "./jobs.ts";
import { createWorkersRepo } from "./workers.ts";
import { createFilesRepo } from "./files.ts";
import { createLogsRepo, DEFAULT_LOG_CHARS } from "./logs.ts";
import { createVolumesRepo } from "./volumes.ts";
import { createSecretsRepo } from "./secrets.ts";
import { createSchedulesRepo } from "./schedules.ts";
import { startCheckpointer } from "./checkpointer.ts";

export type { EndpointRecord, EnvVar } from "./endpoints.ts";
export type { TemplateRecord } from "./templates.ts";
export type { AppRow, EnvironmentRow } from "./apps.ts";
export type { BuildRow, UploadRow, ArtifactRow } from "./builds.ts";
export type { JobRow, JobStatus, JobKind, NewJob } from "./jobs.ts";
export type { FileRecord } from "./files.ts";
export type { VolumeRecord, ObjectRecord, UploadRecord } from "./volumes.ts";
export type { ScheduleState } from "./schedules.ts";

export function createStore(file: string, options: { logLinesPerEndpoint?: number; logCharsPerEndpoint?: number; onError?: (error: unknown) => void } = {}) {
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
    close(): void {
      checkpointer?.stop();
      try {
        this.jobs.flush();
        this.logs.flush();
      } finally {
        db.close();
      }
    },
  };
}
export type Store = ReturnType<typeof createStore>;
