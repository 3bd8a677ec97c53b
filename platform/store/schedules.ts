/**
 * Where each scheduled endpoint's schedule stands: the last slot (a time its cron expression names)
 * that was taken, and the job it started. A slot is taken by one compare-and-set write before its
 * job is queued, so no slot runs twice, across restarts too (docs/platform.md, "Schedules").
 */
import type { Db } from "./db.ts";

export interface ScheduleState {
  endpointId: string;
  /** ms since the epoch: the last slot taken (run or skipped), or when the schedule was first seen. */
  lastSlot: number;
  /** The job of the last slot that ran. */
  lastJobId: string | null;
  /** When that job was queued. */
  lastRunAt: number | null;
  /** Slots skipped because the run before was still going. */
  skipped: number;
}

interface Row {
  endpoint_id: string;
  last_slot: number;
  last_job_id: string | null;
  last_run_at: number | null;
  skipped: number;
}

const stateOf = (row: Row): ScheduleState => ({
  endpointId: row.endpoint_id,
  lastSlot: row.last_slot,
  lastJobId: row.last_job_id,
  lastRunAt: row.last_run_at,
  skipped: row.skipped,
});

export interface SchedulesRepo {
  get(endpointId: string): ScheduleState | undefined;
  /** The state of a schedule, begun at `now` the first time (slots before its deploy never run). */
  begin(endpointId: string, now: number): ScheduleState;
  /** Takes `slot` for `jobId`; false when it (or a later slot) was taken already. */
  takeForRun(endpointId: string, slot: number, jobId: string, now: number): boolean;
  /** Takes `slot` without running it; false when it was taken already. */
  takeSkipped(endpointId: string, slot: number): boolean;
  remove(endpointId: string): void;
  /** The endpoints that have a state. */
  endpointIds(): string[];
}

export function createSchedulesRepo(db: Db): SchedulesRepo {
  const q = {
    get: db.prepare<[string], Row>("SELECT * FROM schedules WHERE endpoint_id = ?"),
    start: db.prepare("INSERT INTO schedules (endpoint_id, last_slot, skipped) VALUES (?, ?, 0) ON CONFLICT (endpoint_id) DO NOTHING"),
    run: db.prepare("UPDATE schedules SET last_slot = ?, last_job_id = ?, last_run_at = ? WHERE endpoint_id = ? AND last_slot < ?"),
    skip: db.prepare("UPDATE schedules SET last_slot = ?, skipped = skipped + 1 WHERE endpoint_id = ? AND last_slot < ?"),
    remove: db.prepare("DELETE FROM schedules WHERE endpoint_id = ?"),
    ids: db.prepare<[], { endpoint_id: string }>("SELECT endpoint_id FROM schedules"),
  };
  return {
    get: (endpointId: string): ScheduleState | undefined => {
      const row = q.get.get(endpointId);
      return row && stateOf(row);
    },
    begin(endpointId: string, now: number): ScheduleState {
      q.start.run(endpointId, now);
      return stateOf(q.get.get(endpointId)!);
    },
    takeForRun: (endpointId: string, slot: number, jobId: string, now: number): boolean => q.run.run(slot, jobId, now, endpointId, slot).changes === 1,
    takeSkipped: (endpointId: string, slot: number): boolean => q.skip.run(slot, endpointId, slot).changes === 1,
    remove: (endpointId: string): void => void q.remove.run(endpointId),
    endpointIds: (): string[] => q.ids.all().map((row) => row.endpoint_id),
  };
}
