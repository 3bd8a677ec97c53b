/**
 * Request bodies and job answers of the dev server (pure).
 *
 * A runsync body is either the platform's envelope `{"input": {...}}` (optionally with `policy` /
 * `webhook`, which the dev server ignores) or a bare object, which is the input itself. An object
 * whose keys are all envelope keys and include `input` is read as the envelope, so a function with a
 * parameter named `input` must be called with the envelope: `{"input": {"input": ...}}`.
 */
import { isFinalJob, type Job } from "../../core/client/types.ts";

export type { Job };

export type ParsedInput = { ok: true; input: Record<string, unknown> } | { ok: false; message: string };

const ENVELOPE_KEYS = new Set(["input", "webhook", "policy"]);

/** A request body as JSON, or the message the dev server answers a malformed one with (400). */
export function parseJsonBody(text: string): { ok: true; body: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, body: JSON.parse(text) };
  } catch (error) {
    return { ok: false, message: `The request body is not valid JSON: ${(error as Error).message}` };
  }
}

export function parseRunsyncBody(text: string): ParsedInput {
  if (text.trim() === "") return { ok: true, input: {} };
  const parsed = parseJsonBody(text);
  if (!parsed.ok) return parsed;
  const { body } = parsed;
  if (!isPlainObject(body)) return { ok: false, message: 'The request body must be a JSON object: the function\'s keyword arguments, or {"input": {...}}.' };
  const keys = Object.keys(body);
  const isEnvelope = keys.includes("input") && keys.every((key) => ENVELOPE_KEYS.has(key));
  if (!isEnvelope) return { ok: true, input: body };
  const input = body.input;
  if (input === null || input === undefined) return { ok: true, input: {} };
  if (!isPlainObject(input)) return { ok: false, message: '"input" must be a JSON object: the function\'s keyword arguments.' };
  return { ok: true, input };
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const isInputErrorObject = (error: unknown): boolean =>
  isPlainObject(error) && (error.error_type === "InputValidationError" || error.error_type === "InputError");

/** True when a FAILED job failed because the function rejected its input. */
export function isInputError(job: Job): boolean {
  if (job.status !== "FAILED") return false;
  const error = job.error;
  if (typeof error !== "string") return isInputErrorObject(error);
  if (/^\s*(InputValidationError|InputError)\b/.test(error)) return true;
  try {
    return isInputErrorObject(JSON.parse(error));
  } catch {
    return false;
  }
}

/**
 * HTTP status of a runsync answer of the dev server: 200 final, 400 input rejected (by the function
 * or by the platform), 202 not final after the wait (the body carries the job id and a status URL).
 */
export function runsyncStatus(job: Job, platformStatus?: number): number {
  if (platformStatus === 400 || isInputError(job)) return 400;
  if (!isFinalJob(job)) return 202;
  return 200;
}
