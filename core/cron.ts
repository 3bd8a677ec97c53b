/**
 * Cron expressions for scheduled endpoints (`schedule=`): parsing, and the instants they name in a
 * time zone. Five fields (minute hour day-of-month month day-of-week) as in crontab(5), or six with
 * a leading seconds field (as node-cron and Quartz) so a schedule can fire every few seconds — the
 * tests use that instead of a fake clock. Each field takes `*`, `n`, `a-b`, `*\/s`, `a-b/s`, `a/s`
 * and comma lists; months and week days take names (JAN, MON); day-of-week 7 is Sunday; `@hourly`,
 * `@daily`/`@midnight`, `@weekly`, `@monthly`, `@yearly`/`@annually` are the usual shorthands. When
 * both day fields are restricted a day matching either runs (crontab's rule).
 *
 * Time zones come from Intl (IANA names, default UTC). Wall-clock times that a clock change skips
 * do not run that day; times it repeats run once, the first time.
 */

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

/** How far ahead `nextRun` looks before saying the expression never matches (Feb 30). */
const LOOKAHEAD_YEARS = 8;

export interface Cron {
  source: string;
  /** Whether the expression has its own seconds field (else it fires at second 0). */
  hasSeconds: boolean;
  seconds: boolean[];
  minutes: boolean[];
  hours: boolean[];
  days: boolean[];
  months: boolean[];
  weekdays: boolean[];
  /** Both day fields restricted: a day matching either runs. */
  dayOr: boolean;
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

/** One field → which values it takes, and whether it was a bare `*`. */
function parseField(text: string, field: FieldSpec): { take: boolean[]; star: boolean } {
  const take = new Array<boolean>(field.max + 1).fill(false);
  for (const part of text.split(",")) {
    const [range, stepText, extra] = part.split("/");
    if (extra !== undefined || range === "" || range === undefined) throw new CronError(`${field.name} field: "${part}" is not a value, range or step`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) < 1) throw new CronError(`${field.name} field: step "${stepText}" must be a whole number of 1 or more`);
      step = Number(stepText);
    }
    let low: number;
    let high: number;
    if (range === "*") [low, high] = [field.min, field.max];
    else if (range.includes("-")) {
      const [a, b, more] = range.split("-");
      if (more !== undefined || !a || !b) throw new CronError(`${field.name} field: "${range}" is not a range (a-b)`);
      [low, high] = [parseValue(a, field), parseValue(b, field)];
      if (low > high) throw new CronError(`${field.name} field: range ${range} runs backwards`);
    } else {
      low = parseValue(range, field);
      high = stepText === undefined ? low : field.max; // `5/15`: from 5 to the end, every 15
    }
    for (let v = low; v <= high; v += step) take[v] = true;
  }
  return { take, star: text === "*" || text.startsWith("*/") };
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
  const hasSeconds = fields.length === 6;
  const [sec, min, hour, day, month, weekday] = hasSeconds ? fields : ["0", ...fields];
  const days = parseField(day!, DAY);
  const weekdays = parseField(weekday!, WEEKDAY);
  if (weekdays.take[7]) weekdays.take[0] = true; // 7 is Sunday too
  const cron: Cron = {
    source,
    hasSeconds,
    seconds: parseField(sec!, SECOND).take,
    minutes: parseField(min!, MINUTE).take,
    hours: parseField(hour!, HOUR).take,
    days: days.take,
    months: parseField(month!, MONTH).take,
    weekdays: weekdays.take,
    dayOr: !days.star && !weekdays.star,
  };
  if (nextRun(cron, Date.UTC(2000, 0, 1), "UTC") === undefined) throw new CronError(`it never matches a date (day ${day} of month ${month})`);
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

/** The wall-clock time in `timeZone` at instant `ms`, as the UTC ms of those same fields (whole seconds). */
function wallOf(ms: number, timeZone: string): number {
  const p: Record<string, number> = {};
  for (const part of formatter(timeZone).formatToParts(new Date(ms))) if (part.type !== "literal") p[part.type] = Number(part.value);
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour! % 24, p.minute!, p.second!);
}

/** The earliest instant whose wall clock in `timeZone` reads `wall`; undefined in a clock change's gap. */
function instantOf(wall: number, timeZone: string): number | undefined {
  let found: number | undefined;
  // The zone's offsets a day either side cover both sides of any change near `wall`.
  for (const probe of [wall - 86_400_000, wall, wall + 86_400_000]) {
    const candidate = wall - (wallOf(probe, timeZone) - Math.floor(probe / 1000) * 1000);
    if (wallOf(candidate, timeZone) === wall && (found === undefined || candidate < found)) found = candidate;
  }
  return found;
}

function dayMatches(cron: Cron, wall: Date): boolean {
  const day = cron.days[wall.getUTCDate()]!;
  const weekday = cron.weekdays[wall.getUTCDay()]!;
  return cron.dayOr ? day || weekday : day && weekday;
}

/** The first instant after `afterMs` (ms since the epoch) that the expression names; undefined if none within years. */
export function nextRun(cron: Cron, afterMs: number, timeZone = "UTC"): number | undefined {
  const start = Math.floor(afterMs / 1000) * 1000 + 1000;
  let wall = new Date(wallOf(start, timeZone));
  const lastYear = wall.getUTCFullYear() + LOOKAHEAD_YEARS;
  while (wall.getUTCFullYear() <= lastYear) {
    const [y, mo, d, h, mi, s] = [wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate(), wall.getUTCHours(), wall.getUTCMinutes(), wall.getUTCSeconds()];
    if (!cron.months[mo + 1]) wall = new Date(Date.UTC(y, mo + 1, 1));
    else if (!dayMatches(cron, wall)) wall = new Date(Date.UTC(y, mo, d + 1));
    else if (!cron.hours[h]) wall = new Date(Date.UTC(y, mo, d, h + 1));
    else if (!cron.minutes[mi]) wall = new Date(Date.UTC(y, mo, d, h, mi + 1));
    else if (!cron.seconds[s]) wall = new Date(Date.UTC(y, mo, d, h, mi, s + 1));
    else {
      const at = instantOf(wall.getTime(), timeZone);
      if (at !== undefined && at >= start) return at;
      wall = new Date(wall.getTime() + 1000); // skipped or already past (a repeated hour): go on
    }
  }
  return undefined;
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
