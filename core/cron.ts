/**
 * Cron expressions for scheduled endpoints (`schedule=`): the grammar check, and the instants they
 * name in a time zone. Five fields (minute hour day-of-month month day-of-week) as in crontab(5), or
 * six with a leading seconds field (as node-cron and Quartz) so a schedule can fire every few
 * seconds — the tests use that instead of a fake clock. Each field takes `*`, `n`, `a-b`, `*\/s`,
 * `a-b/s`, `a/s` and comma lists; months and week days take names (JAN, MON); day-of-week 7 is
 * Sunday; `@hourly`, `@daily`/`@midnight`, `@weekly`, `@monthly`, `@yearly`/`@annually` are the
 * usual shorthands. When both day fields are restricted a day matching either runs (crontab's rule).
 *
 * The grammar is checked here, field by field, so a refusal says which field and why in the same
 * words as the Python SDK's check (runtime/python/svc/_cron.py); croner walks the calendar and the
 * time zone's clock changes (IANA names from Intl, default UTC): a wall-clock time a change skips
 * runs at the first instant after the change, one it repeats runs once, the first time (cron(8)'s
 * rule).
 */
import { Cron as Croner } from "croner";

export class CronError extends Error {}
interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const SECOND: FieldSpec = { name: "second", min: 0, max: 59 };
const MINUTE: FieldSpec = { name: "minute", min: 0, max: 59 };
const HOUR: FieldSpec = { name: "hour", min: 0, max: 23 };
const DAY: FieldSpec = { name: "day-of-month", min: 1, max: 31 };
const MONTH: FieldSpec = { name: "month", min: 1, max: 12, names: ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"] };
const WEEKDAY: FieldSpec = { name: "day-of-week", min: 0, max: 7, names: ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"] };

const MACROS: Record<string, string> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

export interface Cron {
  source: string;
  /** Whether the expression has its own seconds field (else it fires at second 0). */
  hasSeconds: boolean;
  /** The expression as croner reads it: shorthands expanded, `a/s` spelled `a-max/s`. */
  pattern: string;
}

function parseValue(text: string, field: FieldSpec): number {
  const index = field.names?.indexOf(text.toUpperCase()) ?? -1;
  if (index >= 0) return index + field.min;
  if (!/^\d+$/.test(text))
    throw new CronError(`${field.name} field: "${text}" is not a number${field.names ? ` or a name (${field.names.slice(0, 3).join(", ")}, ...)` : ""}`);
  const value = Number(text);
  if (value < field.min || value > field.max) throw new CronError(`${field.name} field: ${value} is out of range ${field.min}-${field.max}`);
  return value;
}

/** Checks one field; returns it as croner reads it (croner has no `a/s`: it is `a-max/s`). */
function checkField(text: string, field: FieldSpec): string {
  const parts: string[] = [];
  for (const part of text.split(",")) {
    const [range, stepText, extra] = part.split("/");
    if (extra !== undefined || range === "" || range === undefined) throw new CronError(`${field.name} field: "${part}" is not a value, range or step`);
    if (stepText !== undefined && (!/^\d+$/.test(stepText) || Number(stepText) < 1))
      throw new CronError(`${field.name} field: step "${stepText}" must be a whole number of 1 or more`);
    const step = Number(stepText ?? 1);
    if (range === "*") parts.push(part);
    else if (range.includes("-")) {
      const [a, b, more] = range.split("-");
      if (more !== undefined || !a || !b) throw new CronError(`${field.name} field: "${range}" is not a range (a-b)`);
      if (parseValue(a, field) > parseValue(b, field)) throw new CronError(`${field.name} field: range ${range} runs backwards`);
      parts.push(part);
    } else if (stepText === undefined) {
      parseValue(range, field);
      parts.push(part);
    } else {
      parts.push(`${parseValue(range, field)}-${field.max}/${step}`); // `5/15`: from 5 to the end, every 15
    }
  }
  return parts.join(",");
}

/** Parses a cron expression; throws CronError saying which field is wrong and why. */
export function parseCron(expression: string): Cron {
  if (typeof expression !== "string" || expression.trim() === "") throw new CronError("the expression is empty");
  const source = expression.trim();
  const expanded = MACROS[source.toLowerCase()] ?? source;
  if (expanded.startsWith("@")) throw new CronError(`unknown shorthand "${source}" (${Object.keys(MACROS).join(", ")})`);
  const fields = expanded.split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6)
    throw new CronError(`it has ${fields.length} field(s); give 5 (minute hour day-of-month month day-of-week) or 6 (a seconds field first)`);
  const specs = fields.length === 6 ? [SECOND, MINUTE, HOUR, DAY, MONTH, WEEKDAY] : [MINUTE, HOUR, DAY, MONTH, WEEKDAY];
  const cron: Cron = { source, hasSeconds: fields.length === 6, pattern: fields.map((text, i) => checkField(text, specs[i]!)).join(" ") };
  if (nextRun(cron, Date.UTC(2000, 0, 1), "UTC") === undefined) {
    const [day, month] = fields.slice(-3, -1);
    throw new CronError(`it never matches a date (day ${day} of month ${month})`);
  }
  return cron;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Whether Intl knows the IANA time zone name. */
export function isTimeZone(name: string): boolean {
  try {
    formatter(name);
    return true;
  } catch {
    return false;
  }
}

const schedules = new Map<string, Croner>();

/** The first instant after `afterMs` (ms since the epoch) that the expression names; undefined if none. */
export function nextRun(cron: Cron, afterMs: number, timeZone = "UTC"): number | undefined {
  const key = `${timeZone} ${cron.pattern}`;
  let schedule = schedules.get(key);
  if (!schedule) schedules.set(key, (schedule = new Croner(cron.pattern, { timezone: timeZone, paused: true })));
  return schedule.nextRun(new Date(afterMs))?.getTime();
}

/**
 * The latest instant in (afterMs, nowMs] that the expression names, or undefined: the one slot a
 * scheduler runs after downtime, however many it missed. Searches back from now in doubling
 * windows, so a long downtime does not walk every missed slot.
 */
export function latestDue(cron: Cron, afterMs: number, nowMs: number, timeZone = "UTC"): number | undefined {
  const first = nextRun(cron, afterMs, timeZone);
  if (first === undefined || first > nowMs) return undefined;
  for (let span = 1000; ; span *= 2) {
    const from = Math.max(afterMs, nowMs - span);
    let slot = nextRun(cron, from, timeZone);
    if (slot === undefined || slot > nowMs) continue; // none in this window: look further back
    for (let after = nextRun(cron, slot, timeZone); after !== undefined && after <= nowMs; after = nextRun(cron, slot, timeZone)) slot = after;
    return slot;
  }
}
