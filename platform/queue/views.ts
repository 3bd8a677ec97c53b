/** The job bodies of reference section 1, written as JSON text (outputs are kept as JSON text). */
import type { JobRow, JobStatus } from "../store/index.ts";

export interface JobView {
  id: string;
  endpointId: string;
  status: JobStatus;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  /** JSON text of the output (the progress value while IN_PROGRESS). */
  output: string | null;
  error: string | null;
  errorType: string | null;
  workerId: string | null;
  /** Runs before the latest (hand-backs, declared retries, /retry). */
  retries: number;
}

export const viewOfRow = (r: JobRow): JobView => ({
  id: r.id,
  endpointId: r.endpoint_id,
  status: r.status,
  createdAt: r.created_at,
  startedAt: r.started_at,
  finishedAt: r.finished_at,
  output: r.output,
  error: r.error,
  errorType: r.error_type,
  workerId: r.worker_id,
  retries: r.retries,
});

export function timings(v: JobView, now = Date.now()): { delayTime: number; executionTime: number } {
  const end = v.finishedAt ?? now;
  const delayTime = Math.max(0, (v.startedAt ?? end) - v.createdAt);
  const executionTime = v.startedAt === null ? 0 : Math.max(0, end - v.startedAt);
  return { delayTime, executionTime };
}

/** `{"id", "status", "delayTime", "executionTime", "output"?, "error"?, "workerId"?, "attempts"?}`: attempts (runs so far) once a job ran again. */
export function statusBody(v: JobView, now = Date.now()): string {
  const t = timings(v, now);
  let body = `{"id":${JSON.stringify(v.id)},"status":"${v.status}","delayTime":${t.delayTime},"executionTime":${t.executionTime}`;
  if (v.output !== null) body += `,"output":${v.output}`;
  if (v.error !== null) body += `,"error":${JSON.stringify(v.error)}`;
  if (v.workerId !== null) body += `,"workerId":${JSON.stringify(v.workerId)}`;
  if (v.retries > 0) body += `,"attempts":${v.retries + 1}`;
  return `${body}}`;
}

/** `{"id", "status"}`: what /run, /retry, /cancel and a runsync whose wait ran out answer. */
export const shortBody = (id: string, status: JobStatus): string => `{"id":${JSON.stringify(id)},"status":"${status}"}`;

/**
 * The `error` string of a failed job. An error object from the runtime
 * (`{error_type, error_message, error_traceback}`) is kept as its JSON text, like the hosted
 * platform does, so clients can parse type, message and traceback back out; an
 * `InputValidationError` keeps only its message (it is what runsync answers with HTTP 400).
 */
export function errorText(error: unknown): { error: string; errorType: string | null } {
  if (typeof error === "string") return { error, errorType: null };
  if (error && typeof error === "object") {
    const e = error as Record<string, unknown>;
    const errorType = typeof e.error_type === "string" ? e.error_type : null;
    if (errorType === "InputValidationError") return { error: String(e.error_message ?? "invalid input"), errorType };
    return { error: JSON.stringify(error), errorType };
  }
  return { error: JSON.stringify(error ?? null), errorType: null };
}
