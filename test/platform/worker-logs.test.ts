/**
 * Worker log lines are written in batches, on a timer that exists only while lines wait: an idle
 * platform sets none (docs/platform.md, "Hot path").
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDb } from "../../platform/store/db.ts";
import { createLogsRepo } from "../../platform/store/logs.ts";

afterEach(() => {
  vi.useRealTimers();
});

describe("worker log batches", () => {
  it("writes a line 50 ms after it came, with the lines after it, and keeps no timer while none waits", () => {
    vi.useFakeTimers();
    const db = openDb(":memory:");
    const logs = createLogsRepo(db, 100);
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
