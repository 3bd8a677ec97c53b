/** The job queue on a real SQLite store, no HTTP: lifecycle, long poll, cancel, retry, purge, ttl, hand-back, recovery. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { rm } from "node:fs/promises";
import Database from "better-sqlite3";
import { join } from "node:path";
import { createStore, type Store } from "../../platform/store/index.ts";
import { JobQueue, type EnqueueInput, PRUNE_CHUNK, TIMEOUT_GRACE_MS } from "../../platform/queue/queue.ts";
import { statusBody, errorText } from "../../platform/queue/views.ts";
import { tempDir } from "./_support.ts";

let dir: string;
let store: Store;
let queue: JobQueue;
let n = 0;

const job = (over: Partial<EnqueueInput> = {}): EnqueueInput => ({
  id: `job-${++n}`,
  endpointId: "ep_a",
  kind: "run",
  input: JSON.stringify({ n }),
  webhook: null,
  executionTimeoutMs: 600_000,
  ttlMs: 86_400_000,
  lowPriority: false,
  ...over,
});

beforeEach(async () => {
  dir = await tempDir();
  store = createStore(join(dir, "platform.db"));
  queue = new JobQueue(store.jobs, { runsyncRetentionMs: 60_000, runRetentionMs: 1_800_000 });
});

afterEach(async () => {
  queue.close();
  store.close();
  await rm(dir, { recursive: true, force: true });
});

describe("job queue", () => {
  it("runs a job through IN_QUEUE → IN_PROGRESS → COMPLETED with timings and the worker id", async () => {
    const j = queue.enqueue(job());
    expect(queue.view(j.id)?.status).toBe("IN_QUEUE");
    const taken = await queue.take("wk_1", "ep_a", 0);
    expect(taken?.id).toBe(j.id);
    expect(queue.view(j.id)).toMatchObject({ status: "IN_PROGRESS", workerId: "wk_1" });
    expect(queue.jobsOf("wk_1").has(j.id)).toBe(true);
    expect(queue.complete("wk_2", j.id, "1")).toBe(false); // not that worker's
    expect(queue.complete("wk_1", j.id, '{"ok":true}')).toBe(true);
    const body = JSON.parse(statusBody(queue.view(j.id)!));
    expect(body).toMatchObject({ id: j.id, status: "COMPLETED", output: { ok: true }, workerId: "wk_1" });
    expect(typeof body.delayTime).toBe("number");
    expect(typeof body.executionTime).toBe("number");
    expect(queue.jobsOf("wk_1").size).toBe(0);
    expect(store.jobs.get(j.id)?.status).toBe("COMPLETED");
  });

  it("gives the autoscaler what the scalers read: normal jobs queued, the oldest one's wait, the jobs running", () => {
    queue.enqueue(job());
    const second = queue.enqueue(job());
    queue.enqueue(job({ lowPriority: true }));
    expect(queue.takeNow("wk_1", "ep_a")?.id).not.toBe(second.id);
    const stats = queue.stats("ep_a", second.createdAt + 5000);
    expect(stats).toEqual({ queued: 2, queuedNormal: 1, oldestNormalWaitMs: 5000, running: 1 }); // QUEUE_DELAY reads the wait, REQUEST_COUNT the counts
    queue.takeNow("wk_1", "ep_a");
    expect(queue.stats("ep_a", second.createdAt + 5000)).toMatchObject({ queuedNormal: 0, oldestNormalWaitMs: 0, running: 2 }); // a low priority job never asks for workers
  });

  it("hands a job to a waiting long poll at once, and answers null when the poll runs out", async () => {
    const waiting = queue.take("wk_1", "ep_a", 5000);
    const j = queue.enqueue(job());
    expect((await waiting)?.id).toBe(j.id);
    const t0 = Date.now();
    expect(await queue.take("wk_1", "ep_a", 100)).toBeNull();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90);
  });

  it("takeNow hands the next queued job without waiting (job-done?take=1), or null", () => {
    expect(queue.takeNow("wk_1", "ep_a")).toBeNull();
    const a = queue.enqueue(job());
    const b = queue.enqueue(job());
    expect(queue.takeNow("wk_1", "ep_a")?.id).toBe(a.id);
    expect(queue.takeNow("wk_2", "ep_a")?.id).toBe(b.id);
    expect(queue.view(b.id)).toMatchObject({ status: "IN_PROGRESS", workerId: "wk_2" });
    expect(queue.stats("ep_a").queued).toBe(0);
    expect(queue.takeNow("wk_1", "ep_a")).toBeNull();
  });

  it("drops a long poll whose request was aborted (no job goes to a closed connection)", async () => {
    const abort = new AbortController();
    const waiting = queue.take("wk_1", "ep_a", 5000, (gone) => {
      abort.signal.addEventListener("abort", gone, { once: true });
      return () => abort.signal.removeEventListener("abort", gone);
    });
    abort.abort();
    expect(await waiting).toBeNull();
    const j = queue.enqueue(job());
    expect(queue.view(j.id)?.status).toBe("IN_QUEUE");
  });

  it("waitFinal resolves when the job finishes, or answers the job as it is when the wait runs out", async () => {
    const j = queue.enqueue(job({ kind: "runsync" }));
    const early = await queue.waitFinal(j.id, "ep_a", 50);
    expect(early?.status).toBe("IN_QUEUE");
    const final = queue.waitFinal(j.id, "ep_a", 5000);
    await queue.take("wk_1", "ep_a", 0);
    queue.fail("wk_1", j.id, "bad", null);
    expect((await final)?.status).toBe("FAILED");
    expect(await queue.waitFinal(j.id, "ep_b", 10)).toBeUndefined(); // another endpoint's job

    // The client went away: the wait ends at once with the job as it is; a finished wait stops listening.
    const k = queue.enqueue(job({ kind: "runsync" }));
    let gone: (() => void) | undefined;
    let listening = 0;
    const onGone = (fn: () => void) => {
      gone = fn;
      listening++;
      return () => listening--;
    };
    const waiting = queue.waitFinal(k.id, "ep_a", 60_000, onGone);
    expect(listening).toBe(1);
    gone!();
    expect((await waiting)?.status).toBe("IN_QUEUE");
    expect(listening).toBe(0);
    const finished = queue.waitFinal(k.id, "ep_a", 60_000, onGone);
    await queue.take("wk_1", "ep_a", 0);
    queue.complete("wk_1", k.id, "1");
    expect((await finished)?.status).toBe("COMPLETED");
    expect(listening).toBe(0);
  });

  it("cancels queued and running jobs; the worker of a running one is told", async () => {
    const cancelled: string[] = [];
    queue.hooks.onCancelRunning = (_w, id) => cancelled.push(id);
    const a = queue.enqueue(job());
    const b = queue.enqueue(job());
    expect(queue.cancel(b.id, "ep_a")?.status).toBe("CANCELLED");
    await queue.take("wk_1", "ep_a", 0);
    expect(queue.cancel(a.id, "ep_a")?.status).toBe("CANCELLED");
    expect(cancelled).toEqual([a.id]);
    expect(queue.complete("wk_1", a.id, "1")).toBe(false); // result dropped: 404 for the worker
    expect(await queue.take("wk_1", "ep_a", 0)).toBeNull(); // b is not handed out
    expect(queue.cancel("nope", "ep_a")).toBeUndefined();
  });

  it("retries FAILED and TIMED_OUT jobs under the same id, with the old result cleared", async () => {
    const j = queue.enqueue(job());
    await queue.take("wk_1", "ep_a", 0);
    queue.fail("wk_1", j.id, "bad", null);
    expect(queue.retry(j.id, "ep_a")).toEqual({ status: "IN_QUEUE", retried: true });
    const v = queue.view(j.id)!;
    expect(v.status).toBe("IN_QUEUE");
    expect(v.error).toBeNull();
    expect(store.jobs.get(j.id)?.retries).toBe(1);
    const again = await queue.take("wk_2", "ep_a", 0);
    expect(again?.input).toBe(j.input);
    queue.complete("wk_2", j.id, "2");
    expect(queue.retry(j.id, "ep_a")).toEqual({ status: "COMPLETED", retried: false });
  });

  it("purges queued jobs only", async () => {
    const running = queue.enqueue(job());
    await queue.take("wk_1", "ep_a", 0);
    const q = [queue.enqueue(job()), queue.enqueue(job()), queue.enqueue(job({ lowPriority: true }))];
    expect(queue.stats("ep_a").queued).toBe(3);
    expect(queue.stats("ep_a").queuedNormal).toBe(2);
    expect(queue.purge("ep_a")).toBe(3);
    for (const x of q) expect(queue.view(x.id)).toBeUndefined();
    expect(queue.view(running.id)?.status).toBe("IN_PROGRESS");
    expect(queue.stats("ep_a").queued).toBe(0);
  });

  it("expires jobs past their ttl (gone: /status 404) and times out running jobs past executionTimeout", async () => {
    const finals: string[] = [];
    queue.hooks.onFinal = (v) => finals.push(`${v.id}:${v.status}`);
    const old = queue.enqueue(job({ ttlMs: 10_000 }));
    const slow = queue.enqueue(job({ executionTimeoutMs: 5000 }));
    expect(queue.sweep(Date.now())).toBe(0);
    // take `slow` (old is first: cancel nothing, take both in order)
    const first = await queue.take("wk_1", "ep_a", 0);
    expect(first?.id).toBe(old.id);
    const second = await queue.take("wk_2", "ep_a", 0);
    expect(second?.id).toBe(slow.id);
    const now = Date.now();
    queue.sweep(now + 5000 + TIMEOUT_GRACE_MS + 10);
    expect(queue.view(slow.id)?.status).toBe("TIMED_OUT");
    queue.sweep(now + 10_001);
    expect(queue.view(old.id)).toBeUndefined();
    expect(store.jobs.get(old.id)).toBeUndefined();
    expect(finals).toEqual([`${slow.id}:TIMED_OUT`, `${old.id}:TIMED_OUT`]);
  });

  it("hands a dead worker's job back once, then fails it with 'worker died'", async () => {
    const j = queue.enqueue(job());
    await queue.take("wk_1", "ep_a", 0);
    queue.handBack("wk_1", [j.id]);
    expect(queue.view(j.id)?.status).toBe("IN_QUEUE");
    expect(store.jobs.get(j.id)?.retries).toBe(1);
    const again = await queue.take("wk_2", "ep_a", 0);
    expect(again?.id).toBe(j.id); // first in line again
    queue.handBack("wk_2", [j.id]);
    const v = queue.view(j.id)!;
    expect(v.status).toBe("FAILED");
    expect(v.error).toBe("worker died");
  });

  it("recovers after a restart: queued jobs stay queued, running ones are requeued as a retry", async () => {
    const a = queue.enqueue(job());
    const b = queue.enqueue(job());
    await queue.take("wk_1", "ep_a", 0); // a runs
    // a new queue on the same database, as after kill -9
    const fresh = new JobQueue(store.jobs, { runsyncRetentionMs: 60_000, runRetentionMs: 1_800_000 });
    expect(fresh.recover()).toEqual({ requeued: 1, expired: 0 });
    expect(fresh.view(a.id)?.status).toBe("IN_QUEUE");
    expect(store.jobs.get(a.id)?.retries).toBe(1);
    const ids = [(await fresh.take("wk_9", "ep_a", 0))?.id, (await fresh.take("wk_9", "ep_a", 0))?.id];
    expect(ids).toEqual([a.id, b.id]);
    fresh.close();
  });

  it("folds a job's start into its final write when both fall in one group commit; a start committed alone is what a crash sees", async () => {
    const other = new Database(join(dir, "platform.db"), { readonly: true }); // sees committed rows only, like a restart
    const committed = (id: string) =>
      other.prepare("SELECT status, started_at, worker_id FROM jobs WHERE id = ?").get(id) as
        | { status: string; started_at: number | null; worker_id: string | null }
        | undefined;
    try {
      const a = queue.enqueue(job());
      store.jobs.flush();
      expect(committed(a.id)?.status).toBe("IN_QUEUE");
      const taken = queue.takeNow("wk_1", "ep_a")!;
      expect(queue.complete("wk_1", a.id, "1")).toBe(true);
      expect(committed(a.id)?.status).toBe("IN_QUEUE"); // neither write committed yet: a crash reruns the job
      store.jobs.flush();
      expect(committed(a.id)).toEqual({ status: "COMPLETED", started_at: taken.startedAt, worker_id: "wk_1" });

      const b = queue.enqueue(job());
      queue.takeNow("wk_1", "ep_a");
      store.jobs.flush(); // the start commits on its own: after a crash here the job is requeued as a retry
      expect(committed(b.id)).toMatchObject({ status: "IN_PROGRESS", worker_id: "wk_1" });
      expect(queue.complete("wk_1", b.id, "2")).toBe(true);
      store.jobs.flush();
      expect(committed(b.id)?.status).toBe("COMPLETED");
    } finally {
      other.close();
    }
  });

  it("holds a runsync job's insert until its final write (one INSERT), or until an answer, a read or another write needs the row", async () => {
    const other = new Database(join(dir, "platform.db"), { readonly: true }); // sees committed rows only, like a restart
    const committed = (id: string) =>
      other.prepare("SELECT status, started_at, worker_id, output, retries FROM jobs WHERE id = ?").get(id) as Record<string, unknown> | undefined;
    try {
      const a = queue.enqueue(job({ kind: "runsync" }));
      const run = queue.enqueue(job()); // a /run job: committed by durable()
      await store.jobs.durable();
      expect(committed(a.id)).toBeUndefined(); // not acknowledged yet: a crash here loses only an unanswered runsync
      const taken = queue.takeNow("wk_1", "ep_a")!;
      expect(taken.id).toBe(a.id);
      await store.jobs.durable();
      expect(committed(a.id)).toBeUndefined();
      expect(queue.complete("wk_1", a.id, '{"ok":1}')).toBe(true);
      await store.jobs.durable(); // what job-done and the runsync answer wait for
      expect(committed(a.id)).toEqual({ status: "COMPLETED", started_at: taken.startedAt, worker_id: "wk_1", output: '{"ok":1}', retries: 0 });

      // A runsync answer that names an unfinished job (its wait ran out) commits it first; a
      // restart finds it in enqueue order, ahead of a job enqueued after it but written before.
      const b = queue.enqueue(job({ kind: "runsync" }));
      queue.takeNow("wk_1", "ep_a"); // the /run job
      queue.takeNow("wk_1", "ep_a");
      await new Promise((r) => setTimeout(r, 5));
      const later = queue.enqueue(job());
      await store.jobs.durable();
      await store.jobs.durable(b.id);
      expect(committed(b.id)).toMatchObject({ status: "IN_PROGRESS", worker_id: "wk_1" });
      const fresh = new JobQueue(store.jobs, { runsyncRetentionMs: 60_000, runRetentionMs: 1_800_000 });
      expect(fresh.recover()).toEqual({ requeued: 2, expired: 0 }); // as after kill -9: both run again
      expect([fresh.takeNow("wk_9", "ep_a")?.id, fresh.takeNow("wk_9", "ep_a")?.id, fresh.takeNow("wk_9", "ep_a")?.id]).toEqual([run.id, b.id, later.id]);
      fresh.close();

      // Reads see held jobs; a hand-back writes the job before its requeue.
      const c = queue.enqueue(job({ kind: "runsync", endpointId: "ep_c" }));
      expect(store.jobs.counts("ep_c")).toEqual([{ status: "IN_QUEUE", n: 1, retried: 0 }]);
      const d = queue.enqueue(job({ kind: "runsync", endpointId: "ep_c" }));
      queue.takeNow("wk_2", "ep_c"); // c
      queue.takeNow("wk_2", "ep_c"); // d, held
      queue.handBack("wk_2", [c.id, d.id]);
      await store.jobs.durable();
      expect(committed(d.id)).toMatchObject({ status: "IN_QUEUE", started_at: null, retries: 1 });

      // A held job removed (ttl, purge, endpoint deleted) never reaches the database.
      const e = queue.enqueue(job({ kind: "runsync", endpointId: "ep_e" }));
      expect(queue.purge("ep_e")).toBe(1);
      store.jobs.flush();
      expect(committed(e.id)).toBeUndefined();
    } finally {
      other.close();
    }
  });

  it("streams chunks once to /stream readers, in order", async () => {
    const j = queue.enqueue(job());
    await queue.take("wk_1", "ep_a", 0);
    queue.addChunk("wk_1", j.id, '{"i":0}');
    queue.addChunk("wk_1", j.id, '{"i":1}');
    expect(await queue.readStream(j.id, "ep_a", 0)).toEqual({ status: "IN_PROGRESS", chunks: ['{"i":0}', '{"i":1}'] });
    const waiting = queue.readStream(j.id, "ep_a", 2000);
    queue.addChunk("wk_1", j.id, '{"i":2}');
    expect((await waiting)?.chunks).toEqual(['{"i":2}']);
    queue.complete("wk_1", j.id, '[{"i":0},{"i":1},{"i":2}]');
    expect(await queue.readStream(j.id, "ep_a", 0)).toEqual({ status: "COMPLETED", chunks: [] });
  });

  it("prunes finished jobs after their retention", async () => {
    const j = queue.enqueue(job({ kind: "runsync" }));
    await queue.take("wk_1", "ep_a", 0);
    queue.complete("wk_1", j.id, "1");
    expect(queue.prune(Date.now() + 1000)).toBe(0);
    expect(queue.prune(Date.now() + 61_000)).toBe(1);
    expect(queue.view(j.id)).toBeUndefined();
  });

  it("prunes at most the limit, oldest first, with their stream chunks; the rest stays for the next chunk", async () => {
    const ids: string[] = [];
    for (let i = 0; i < PRUNE_CHUNK + 20; i++) {
      const j = queue.enqueue(job({ kind: "runsync" }));
      await queue.take("wk_1", "ep_a", 0);
      if (i === 0) queue.addChunk("wk_1", j.id, '{"i":0}');
      queue.complete("wk_1", j.id, String(i));
      ids.push(j.id);
    }
    const later = Date.now() + 61_000;
    expect(queue.prune(later, PRUNE_CHUNK)).toBe(PRUNE_CHUNK);
    expect(queue.view(ids[0]!)).toBeUndefined();
    expect(store.db.prepare("SELECT COUNT(*) AS n FROM job_stream").get()).toEqual({ n: 0 });
    expect(queue.view(ids.at(-1)!)?.status).toBe("COMPLETED");
    expect(queue.prune(later)).toBe(20);
    expect(queue.view(ids.at(-1)!)).toBeUndefined();
  });

  it("keeps error objects as JSON text and input errors as their message", () => {
    expect(errorText("plain")).toEqual({ error: "plain", errorType: null });
    const obj = { error_type: "ValueError", error_message: "boom", error_traceback: "tb" };
    expect(JSON.parse(errorText(obj).error)).toEqual(obj);
    expect(errorText({ error_type: "InputValidationError", error_message: "bad" })).toEqual({ error: "bad", errorType: "InputValidationError" });
  });
});
