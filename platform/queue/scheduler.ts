/**
 * Scheduled endpoints (`schedule=`): on each sweep, every endpoint whose schedule has a slot due
 * gets one job, as if /run had been called with the schedule's input (docs/platform.md,
 * "Schedules"). Durable through the store's `schedules` table: the slot is taken (compare-and-set)
 * before its job is queued, so a slot never runs twice, and after downtime only the latest missed
 * slot runs (no catch-up storm). A slot that comes while the previous run is still queued or
 * running is skipped, and the log says so.
 */
import { latestDue, nextRun, parseCron, type Cron } from "../../core/cron.ts";
import type { Schedule } from "../../core/endpoint-schema.ts";
import type { EndpointRecord, ScheduleState, Store } from "../store/index.ts";
import { newJobId } from "../_ids.ts";
import { DEFAULT_TTL_MS } from "./policy.ts";
import type { JobQueue } from "./queue.ts";
import type { Telemetry } from "../telemetry/telemetry.ts";

const ACTIVE = new Set(["IN_QUEUE", "IN_PROGRESS"]);

/** What /health and GraphQL show of a schedule. */
export interface ScheduleView extends Schedule {
  lastRunAt: string | null;
  lastJobId: string | null;
  lastStatus: string | null;
  nextRunAt: string | null;
  skipped: number;
}

export type Scheduler = ReturnType<typeof createScheduler>;

export function createScheduler(store: Store, queue: JobQueue, log: (line: string) => void, telemetry?: Telemetry) {
  const crons = new Map<string, Cron>();
  const cronOf = (schedule: Schedule): Cron => {
    let cron = crons.get(schedule.cron);
    if (!cron) crons.set(schedule.cron, (cron = parseCron(schedule.cron)));
    return cron;
  };
  const iso = (ms: number) => new Date(ms).toISOString();
  /** Endpoints with a stored state: one whose schedule went (or that went) loses it, so a schedule added back later starts afresh. */
  const stated = new Set(store.schedules.endpointIds());
  /** Each schedule's state and its next slot, kept here: a sweep with nothing due reads and writes nothing. */
  const known = new Map<string, { state: ScheduleState; cron: string; timezone: string; due: number | undefined }>();

  const entryOf = (endpoint: EndpointRecord, schedule: Schedule, now: number) => {
    let entry = known.get(endpoint.id);
    if (!entry || entry.cron !== schedule.cron || entry.timezone !== schedule.timezone) {
      const state = entry?.state ?? store.schedules.begin(endpoint.id, now);
      stated.add(endpoint.id);
      entry = { state, cron: schedule.cron, timezone: schedule.timezone, due: nextRun(cronOf(schedule), state.lastSlot, schedule.timezone) };
      known.set(endpoint.id, entry);
    }
    return entry;
  };

  /** Queues the due slot of one endpoint's schedule, if any. */
  const fire = (endpoint: EndpointRecord, schedule: Schedule, now: number): void => {
    const entry = entryOf(endpoint, schedule, now);
    if (entry.due === undefined || entry.due > now) return;
    const slot = latestDue(cronOf(schedule), entry.state.lastSlot, now, schedule.timezone)!;
    const previous = entry.state.lastJobId ? queue.view(entry.state.lastJobId, endpoint.id) : undefined;
    const skip = previous !== undefined && ACTIVE.has(previous.status);
    const id = skip ? "" : newJobId();
    if (!(skip ? store.schedules.takeSkipped(endpoint.id, slot) : store.schedules.takeForRun(endpoint.id, slot, id, now))) {
      known.delete(endpoint.id); // taken already: read the stored state again next time
      return;
    }
    entry.state = skip
      ? { ...entry.state, lastSlot: slot, skipped: entry.state.skipped + 1 }
      : { ...entry.state, lastSlot: slot, lastJobId: id, lastRunAt: now };
    entry.due = nextRun(cronOf(schedule), slot, schedule.timezone);
    telemetry?.scheduleFired(endpoint.id, skip);
    if (skip) {
      log(`schedule of ${endpoint.name}: the ${iso(slot)} run skipped, the previous run ${previous.id} is still ${previous.status}`);
      return;
    }
    queue.enqueue({
      id,
      endpointId: endpoint.id,
      kind: "run",
      input: JSON.stringify(schedule.input),
      webhook: null,
      executionTimeoutMs: endpoint.executionTimeoutMs,
      ttlMs: DEFAULT_TTL_MS,
      lowPriority: false,
    });
    void store.jobs.durable();
    log(`schedule of ${endpoint.name}: the ${iso(slot)} run is job ${id}`);
  };

  return {
    /** Runs what is due; an endpoint's bad schedule (checked at build, so unlikely) is logged, not thrown. */
    tick(now = Date.now()): void {
      const seen = new Set<string>();
      for (const endpoint of store.endpoints.list()) {
        if (!endpoint.schedule) continue;
        seen.add(endpoint.id);
        try {
          fire(endpoint, endpoint.schedule, now);
        } catch (error) {
          log(`schedule of ${endpoint.name}: ${(error as Error).message}`);
        }
      }
      for (const id of stated) {
        if (seen.has(id)) continue;
        store.schedules.remove(id);
        stated.delete(id);
        known.delete(id);
      }
    },

    /** The endpoint's schedule with its last and next runs; null when it has none. */
    view(endpoint: EndpointRecord, now = Date.now()): ScheduleView | null {
      const schedule = endpoint.schedule;
      if (!schedule) return null;
      const state: ScheduleState | undefined = store.schedules.get(endpoint.id);
      const next = nextRun(cronOf(schedule), Math.max(now, state?.lastSlot ?? now), schedule.timezone);
      const last = state?.lastJobId ? queue.view(state.lastJobId, endpoint.id) : undefined;
      return {
        ...schedule,
        lastRunAt: state?.lastRunAt ? iso(state.lastRunAt) : null,
        lastJobId: state?.lastJobId ?? null,
        lastStatus: last?.status ?? null,
        nextRunAt: next === undefined ? null : iso(next),
        skipped: state?.skipped ?? 0,
      };
    },
  };
}
