/**
 * The scheduler's rules with a clock the test drives (platform/queue/scheduler.ts on a real SQLite
 * store and job queue, no workers): nothing before the schedule was deployed, one job per slot,
 * one job for any downtime, no slot twice across a restart, a slot skipped while the run before is
 * going. test/platform/schedules.test.ts shows the same on a running platform.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createStore, type EndpointRecord, type Store } from "../../platform/store/index.ts";
import { JobQueue } from "../../platform/queue/queue.ts";
import { createScheduler } from "../../platform/queue/scheduler.ts";
import { endpointInputSchema } from "../../platform/graphql/inputs.ts";

const T0 = Date.parse("2026-11-28T10:00:30Z");
const MINUTE = 60_000;

const endpoint = (schedule: EndpointRecord["schedule"]): EndpointRecord => ({
  id: "ep-nightly",
  name: "nightly",
  type: "QB",
  gpuIds: null,
  gpuCount: null,
  instanceIds: ["cpu3c-2-4"],
  idleTimeout: 5,
  scalerType: "QUEUE_DELAY",
  scalerValue: 4,
  workersMin: 0,
  workersMax: 1,
  executionTimeoutMs: 600_000,
  templateId: null,
  imageName: null,
  env: [],
  environmentId: null,
  buildId: null,
  locations: null,
  networkVolumeId: null,
  flashBootType: null,
  minCudaVersion: null,
  createdAt: T0,
  schedule,
});

describe("the scheduler", () => {
  const opened: Store[] = [];
  let dir: string | undefined;
  afterEach(async () => {
    for (const store of opened.splice(0)) store.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A platform's scheduling parts on the state in `dir` (a second call: the restart). */
  const boot = (file: string) => {
    const store = createStore(file);
    opened.push(store);
    const queue = new JobQueue(store.jobs, { runsyncRetentionMs: 60_000, runRetentionMs: 60_000 });
    queue.recover();
    const logs: string[] = [];
    return { store, queue, logs, scheduler: createScheduler(store, queue, (line) => logs.push(line)) };
  };
  const jobsOf = (store: Store) => store.jobs.counts("ep-nightly").reduce((n, row) => n + row.n, 0);

  it("queues one job per slot with the schedule's input, one for any downtime, none twice across a restart", async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-scheduler-"));
    const file = join(dir, "platform.db");
    const first = boot(file);
    first.store.endpoints.save(endpoint({ cron: "* * * * *", timezone: "UTC", input: { tag: "nightly" } }));

    first.scheduler.tick(T0); // first seen at 10:00:30: the 10:00 slot came before the deploy
    expect(jobsOf(first.store)).toBe(0);
    first.scheduler.tick(T0 + MINUTE); // 10:01:30: the 10:01 slot
    first.scheduler.tick(T0 + MINUTE + 5000); // same slot again: nothing
    expect(jobsOf(first.store)).toBe(1);
    const [job] = first.logs.map((line) => /the (\S+) run is job (\S+)/.exec(line)!);
    expect(job![1]).toBe("2026-11-28T10:01:00.000Z");
    const view = first.queue.view(job![2]!)!;
    expect(view.status).toBe("IN_QUEUE");
    expect(first.store.jobs.get(job![2]!)!.input).toBe('{"tag":"nightly"}');
    first.queue.cancel(job![2]!, "ep-nightly"); // done with, so the next slot is not skipped
    await first.store.jobs.durable();

    first.scheduler.tick(T0 + 10 * MINUTE); // 10:10:30 after nine missed slots: one run, for 10:10
    expect(jobsOf(first.store)).toBe(2);
    expect(first.logs.at(-1)).toContain("the 2026-11-28T10:10:00.000Z run is job");
    await first.store.jobs.durable();
    first.store.close();
    opened.pop();

    const second = boot(file); // restarted within the same slot: it ran already
    second.scheduler.tick(T0 + 10 * MINUTE + 10_000);
    expect(jobsOf(second.store)).toBe(2);
    expect(second.scheduler.view(second.store.endpoints.get("ep-nightly")!, T0 + 10 * MINUTE + 10_000)).toMatchObject({
      cron: "* * * * *",
      lastRunAt: new Date(T0 + 10 * MINUTE).toISOString(),
      lastStatus: "IN_QUEUE",
      nextRunAt: "2026-11-28T10:11:00.000Z",
      skipped: 0,
    });

    // the 10:10 run is still queued at 10:11: that slot is skipped, and the log says why
    second.scheduler.tick(T0 + 11 * MINUTE);
    expect(jobsOf(second.store)).toBe(2);
    expect(second.logs.at(-1)).toMatch(/schedule of nightly: the 2026-11-28T10:11:00.000Z run skipped, the previous run \S+ is still IN_QUEUE/);
    expect(second.store.schedules.get("ep-nightly")!.skipped).toBe(1);
  });

  it("forgets a schedule taken off its endpoint: added back, it starts afresh instead of running a slot from before", async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-scheduler-"));
    const { store, scheduler } = boot(join(dir, "platform.db"));
    store.endpoints.save(endpoint({ cron: "0 * * * *", timezone: "UTC", input: {} }));
    scheduler.tick(T0);
    store.endpoints.save(endpoint(null));
    scheduler.tick(T0 + 1000);
    expect(store.schedules.get("ep-nightly")).toBeUndefined();
    store.endpoints.save(endpoint({ cron: "0 * * * *", timezone: "UTC", input: {} }));
    scheduler.tick(T0 + 3 * 3600_000); // three hours later: the 13:00 slot is before it came back
    expect(jobsOf(store)).toBe(0);
    scheduler.tick(T0 + 4 * 3600_000); // 14:00:30: its first slot since it came back runs
    expect(jobsOf(store)).toBe(1);
    expect(store.schedules.get("ep-nightly")!.lastSlot).toBe(Date.parse("2026-11-28T14:00:00Z"));
  });

  it("saveEndpoint checks a schedule by the build's rules: cron grammar, time zone, input", () => {
    const parse = (schedule: unknown) => endpointInputSchema.safeParse({ name: "nightly", schedule });
    expect(parse({ cron: "0 3 * * *", timezone: "Europe/Paris", input: { n: 1 } }).data?.schedule).toEqual({
      cron: "0 3 * * *",
      timezone: "Europe/Paris",
      input: { n: 1 },
    });
    expect(parse({ cron: "0 3 * * *" }).data?.schedule).toEqual({ cron: "0 3 * * *", timezone: "UTC", input: {} });
    expect(parse(null).data?.schedule).toBeNull(); // removes it
    expect(parse({ cron: "61 * * * *" }).error?.issues[0]?.message).toContain("minute field: 61 is out of range 0-59");
    expect(parse({ cron: "0 3 * * *", timezone: "Mars/Olympus" }).error?.issues[0]?.message).toContain("is not an IANA time zone name");
    expect(parse({ cron: "0 3 * * *", input: [1] }).error?.issues[0]?.message).toContain("schedule input must be a dict");
  });
});
