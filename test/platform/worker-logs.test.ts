/**
 * Worker log lines are written in batches, on a timer that exists only while lines wait: an idle
 * platform sets none (docs/platform.md, "Hot path").
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDb } from "../../platform/store/db.ts";
import { createLogsRepo, DEFAULT_LOG_CHARS } from "../../platform/store/logs.ts";
import { LogBudget } from "../../platform/workers/log-rate.ts";

afterEach(() => {
  vi.useRealTimers();
});

describe("worker log batches", () => {
  it("writes a line 50 ms after it came, with the lines after it, and keeps no timer while none waits", () => {
    vi.useFakeTimers();
    const db = openDb(":memory:");
    const logs = createLogsRepo(db, { lines: 100, chars: DEFAULT_LOG_CHARS });
    expect(vi.getTimerCount()).toBe(0);
    logs.append("ep_a", "wk_1", "first");
    vi.advanceTimersByTime(20);
    logs.append("ep_a", "wk_1", "second");
    expect(vi.getTimerCount()).toBe(1);
    expect(logs.tail("ep_a", 10)).toEqual([]);
    vi.advanceTimersByTime(30);
    expect(logs.tail("ep_a", 10)).toEqual(["[wk_1] first", "[wk_1] second"]);
    expect(vi.getTimerCount()).toBe(0);

    db.close();
    logs.append("ep_a", "wk_1", "after close");
    expect(() => vi.advanceTimersByTime(50)).not.toThrow(); // the line is dropped, not written to a closed database
  });
});

describe("a worker's log rate", () => {
  it("keeps lines within the rate and its burst, drops the rest until half the burst is back, and then says once how much it dropped", () => {
    const budget = new LogBudget({ perSecond: 1000, burst: 2000 }, 0);
    expect(budget.take(1500, 0)).toBe(true);
    expect(budget.marker()).toBeUndefined();
    expect(budget.take(1000, 0)).toBe(false); // 500 left of the burst
    expect(budget.take(100, 100)).toBe(false); // 600 after 0.1 s, but dropping goes on until 1000 (half the burst)
    expect(budget.recovered(200)).toBe(false);
    expect(budget.recovered(500)).toBe(true);
    expect(budget.take(100, 500)).toBe(true);
    expect(budget.marker()).toBe("2 line(s) of this worker's output dropped (1 KB): over its log rate of 1000 bytes/s (bursts of 2 KB)");
    expect(budget.marker()).toBeUndefined();
    expect(budget.recovered(600_000)).toBe(false); // nothing dropped since
    expect(budget.take(1995, 600_000)).toBe(true); // refilled, never above the burst
    expect(budget.take(10, 600_000)).toBe(false);
  });
});
