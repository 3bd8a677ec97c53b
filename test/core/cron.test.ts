/** core/cron.ts: the cron grammar, the instants it names in a time zone (clock changes included), the one slot due after downtime. */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { CronError, isTimeZone, latestDue, nextRun, parseCron } from "../../core/cron.ts";

const at = (iso: string) => Date.parse(iso);
const next = (cron: string, after: string, zone = "UTC") => {
  const t = nextRun(parseCron(cron), at(after), zone);
  return t === undefined ? undefined : new Date(t).toISOString();
};
const refusal = (cron: string) => {
  try {
    parseCron(cron);
    return "accepted";
  } catch (error) {
    expect(error).toBeInstanceOf(CronError);
    return (error as Error).message;
  }
};

describe("cron expressions", () => {
  it("name the next minute, hour, day, weekday and month the fields allow", () => {
    expect(next("*/15 * * * *", "2026-11-28T10:07:30Z")).toBe("2026-11-28T10:15:00.000Z");
    expect(next("0 3 * * *", "2026-11-28T03:00:00Z")).toBe("2026-11-29T03:00:00.000Z"); // strictly after
    expect(next("30 9 * * MON-FRI", "2026-11-28T12:00:00Z")).toBe("2026-11-30T09:30:00.000Z"); // Saturday → Monday
    expect(next("0 0 1 jan,jul *", "2026-11-28T00:00:00Z")).toBe("2027-01-01T00:00:00.000Z");
    expect(next("0 0 * * 7", "2026-11-28T00:00:00Z")).toBe("2026-11-29T00:00:00.000Z"); // 7 is Sunday
    expect(next("0 0 13 * 5", "2026-11-28T00:00:00Z")).toBe("2026-12-04T00:00:00.000Z"); // both day fields: either matches
    expect(next("5/20 * * * *", "2026-11-28T10:26:00Z")).toBe("2026-11-28T10:45:00.000Z");
    expect(next("0 0 * * TUE/3", "2026-11-28T00:00:00Z")).toBe("2026-12-01T00:00:00.000Z"); // TUE, FRI: a name starts a step too
    expect(next("0 0 */10 * MON", "2026-11-28T00:00:00Z")).toBe("2026-11-30T00:00:00.000Z"); // a stepped star still restricts: either day field
    expect(next("@hourly", "2026-11-28T10:26:00Z")).toBe("2026-11-28T11:00:00.000Z");
    expect(next("0 0 29 2 *", "2026-03-01T00:00:00Z")).toBe("2028-02-29T00:00:00.000Z");
  });

  it("take an optional leading seconds field", () => {
    expect(next("*/2 * * * * *", "2026-11-28T10:00:01.500Z")).toBe("2026-11-28T10:00:02.000Z");
    expect(next("30 0 12 * * *", "2026-11-28T12:00:30Z")).toBe("2026-11-29T12:00:30.000Z");
  });

  it("run in the schedule's time zone; a time a clock change skips runs just after it, one it repeats runs once", () => {
    expect(next("0 3 * * *", "2026-11-28T12:00:00Z", "Europe/Paris")).toBe("2026-11-29T02:00:00.000Z"); // CET
    expect(next("0 3 * * *", "2026-03-28T12:00:00Z", "Europe/Paris")).toBe("2026-03-29T01:00:00.000Z"); // CEST from that night
    expect(next("30 2 * * *", "2026-03-28T12:00:00Z", "Europe/Paris")).toBe("2026-03-29T01:00:00.000Z"); // 02:30 does not exist on the 29th: 03:00 CEST, as cron(8)
    expect(next("30 2 * * *", "2026-03-29T01:00:00Z", "Europe/Paris")).toBe("2026-03-30T00:30:00.000Z"); // once that day
    expect(next("30 2 * * *", "2026-10-24T12:00:00Z", "Europe/Paris")).toBe("2026-10-25T00:30:00.000Z"); // the first 02:30...
    expect(next("30 2 * * *", "2026-10-25T00:30:00Z", "Europe/Paris")).toBe("2026-10-26T01:30:00.000Z"); // ...not the second
    expect(isTimeZone("America/New_York")).toBe(true);
    expect(isTimeZone("Mars/Olympus")).toBe(false);
  });

  it("after downtime, only the latest missed slot is due, found without walking every slot", () => {
    const everyFive = parseCron("*/5 * * * *");
    expect(latestDue(everyFive, at("2026-01-01T00:00:00Z"), at("2026-06-01T13:07:03Z"))).toBe(at("2026-06-01T13:05:00Z"));
    expect(latestDue(everyFive, at("2026-06-01T13:05:00Z"), at("2026-06-01T13:07:03Z"))).toBeUndefined(); // taken already
    const everySecond = parseCron("* * * * * *");
    const started = performance.now();
    expect(latestDue(everySecond, at("2020-01-01T00:00:00Z"), at("2026-06-01T13:07:03.400Z"))).toBe(at("2026-06-01T13:07:03Z")); // 6 years of seconds
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("refuse what is not cron, saying which field and why", () => {
    expect(refusal("")).toBe("the expression is empty");
    expect(refusal("* * * *")).toContain("it has 4 field(s); give 5 (minute hour day-of-month month day-of-week) or 6");
    expect(refusal("61 * * * *")).toBe("minute field: 61 is out of range 0-59");
    expect(refusal("0 24 * * *")).toBe("hour field: 24 is out of range 0-23");
    expect(refusal("*/0 * * * *")).toContain('minute field: step "0" must be a whole number of 1 or more');
    expect(refusal("5-1 * * * *")).toBe("minute field: range 5-1 runs backwards");
    expect(refusal("0 0 * * FUNDAY")).toContain('day-of-week field: "FUNDAY" is not a number or a name (SUN, MON, TUE, ...)');
    expect(refusal("0 0 30 2 *")).toBe("it never matches a date (day 30 of month 2)");
    expect(refusal("@often")).toContain('unknown shorthand "@often"');
  });

  it("the Python SDK refuses the same grammar with the same words at decoration time (svc/_cron.py)", () => {
    const expressions = [
      "0 3 * * *",
      "*/2 * * * * *",
      "@daily",
      "",
      "* * * *",
      "61 * * * *",
      "0 24 * * *",
      "*/0 * * * *",
      "5-1 * * * *",
      "0 0 * * FUNDAY",
      "0 0 1 13 *",
      "1-2-3 * * * *",
      "@often",
      "0 9 * * mon-fri",
    ];
    const script = "import json, sys\nfrom svc._cron import cron_problem\nprint(json.dumps([cron_problem(e) for e in json.load(sys.stdin)]))";
    const python = JSON.parse(
      execFileSync("python3", ["-c", script], {
        cwd: new URL("../../runtime/python/", import.meta.url).pathname,
        input: JSON.stringify(expressions),
        encoding: "utf8",
      }),
    );
    const typescript = expressions.map((e) => {
      const message = refusal(e);
      return message === "accepted" ? null : message;
    });
    expect(python).toEqual(typescript);
  });
});
