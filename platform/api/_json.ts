/**
 * JSON bodies, read once. A scan of the text enforces the nesting limit before anything parses
 * it (so no request of any shape reaches code that recurses: a deep input would crash the Python
 * worker's decoder), and notes where each top-level member's value is, so that a job's input and
 * output are kept as the client's and the worker's own text: exact (integers beyond 2^53 too) and
 * never decoded and encoded again. docs/platform.md, "Limits".
 */
import { errors } from "../../core/errors.ts";

/** Deepest nesting of arrays and objects accepted in any JSON body (docs/platform.md, "Limits"). */
export const MAX_JSON_DEPTH = 256;

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;
const COMMA = 44;
const COLON = 58;

/** Offsets of each top-level member's value text, by member name (the last one wins, like JSON.parse). */
export type Members = Map<string, [start: number, end: number]>;

/** Index of the quote that closes the string whose opening quote is at `open` (-1: unterminated). */
function stringEnd(text: string, open: number): number {
  for (let at = text.indexOf('"', open + 1); at >= 0; at = text.indexOf('"', at + 1)) {
    let slashes = 0;
    while (text.charCodeAt(at - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
  }
  return -1;
}

/**
 * Checks the nesting of `text` (throws JSON_TOO_DEEP naming `where`) and, when it is an object,
 * answers where its top-level members' values are. Malformed text is left to JSON.parse.
 */
export function scanJson(text: string, where: string, maxDepth = MAX_JSON_DEPTH): Members {
  const members: Members = new Map();
  let depth = 0;
  let key: string | null = null;
  let valueStart = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (end < 0) break;
      // A string at depth 1 before the colon is a top-level member's name.
      if (depth === 1 && key === null && valueStart < 0) {
        const raw = text.slice(i + 1, end);
        try {
          key = raw.includes("\\") ? (JSON.parse(`"${raw}"`) as string) : raw;
        } catch {
          key = raw; // malformed: JSON.parse of the body reports it
        }
      }
      i = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > maxDepth) throw errors.JSON_TOO_DEEP(where, maxDepth);
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY || (c === COMMA && depth === 1)) {
      // A member ends at a comma or the closing brace of the top-level object.
      if (depth === 1) {
        if (key !== null && valueStart >= 0) members.set(key, [valueStart, i]);
        key = null;
        valueStart = -1;
      }
      if (c !== COMMA) depth--;
    } else if (c === COLON && depth === 1 && key !== null && valueStart < 0) {
      valueStart = i + 1;
    }
  }
  return members;
}

/**
 * A top-level string member of a JSON object, whatever its nesting or spacing elsewhere (no depth
 * limit: the scan does not recurse); undefined when absent, not a string or malformed. For naming
 * the job of a result that cannot be parsed (too deep, NaN) so that only that job fails.
 */
export function stringMember(text: string, name: string): string | undefined {
  if (text.trimStart().charCodeAt(0) !== OPEN_OBJECT) return undefined;
  const span = scanJson(text, "", Number.POSITIVE_INFINITY).get(name);
  if (!span) return undefined;
  try {
    const value: unknown = JSON.parse(text.slice(span[0], span[1]));
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

export interface ParsedJson {
  value: unknown;
  /** The JSON text of a top-level member's value, as sent (undefined when absent). */
  member(name: string): string | undefined;
}

/** Parses `text` within the nesting limit (JSON_TOO_DEEP); malformed JSON is JSON_MALFORMED naming `where`. */
export function parseJson(text: string, where: string): ParsedJson {
  const scanned = scanJson(text, where);
  const members = text.trimStart().charCodeAt(0) === OPEN_OBJECT ? scanned : undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw errors.JSON_MALFORMED(where, (error as Error).message);
  }
  return {
    value,
    member(name) {
      const span = members?.get(name);
      return span ? text.slice(span[0], span[1]).trim() : undefined;
    },
  };
}
