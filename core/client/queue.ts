/**
 * Queue routes of an endpoint (`{base}/v2/<endpoint_id>/...`, reference/platform-api.md section 1).
 * runsync never loses a job id: a non-final answer is followed by status-sync (or status) polls
 * until the job is final, with no overall limit unless the caller sets one.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { errors, isSvcError } from "../errors.ts";
import { httpError, httpRequest, type HttpResponse } from "./http.ts";
import { isFinalJob, type Job, type RunOptions, type RunSyncOptions } from "./types.ts";

const DEFAULT_WAIT_MS = 90_000;
const MIN_WAIT_MS = 1_000;
const MAX_WAIT_MS = 300_000;
/** Consecutive transport / 5xx / 429 failures tolerated while waiting on a job. */
const MAX_POLL_FAILURES = 10;

/** An endpoint id (`ep_…`) or its queue URL (`http://…/v2/ep_…`) → the queue URL. */
export function queueUrl(baseUrl: string, endpoint: string): string {
  if (/^https?:\/\//i.test(endpoint)) return endpoint.replace(/\/+$/, "");
  return `${baseUrl}/v2/${encodeURIComponent(endpoint)}`;
}

/** An endpoint's queue routes; `endpoint` is its id or its queue URL. */
export interface QueueApi {
  /** POST /run → `{id, status: "IN_QUEUE"}`. */
  run(endpoint: string, input: unknown, options?: RunOptions): Promise<Job>;
  /** GET /status/<id>. */
  status(endpoint: string, jobId: string, options?: { signal?: AbortSignal }): Promise<Job>;
  /** POST /cancel/<id>. */
  cancel(endpoint: string, jobId: string): Promise<Job>;
  /**
   * POST /runsync?wait=…, then — while the answer is not final — GET /status-sync/<id>?wait=…
   * (falling back to /status/<id> once a second where the platform has no status-sync).
   * Resolves with the final job (COMPLETED, FAILED, CANCELLED, TIMED_OUT), or with the last
   * non-final job when `timeoutMs` runs out. Transient failures while waiting are retried; when
   * they persist the error names the job id.
   */
  runsync(endpoint: string, input: unknown, options?: RunSyncOptions): Promise<Job>;
}

export function createQueueApi(baseUrl: string, apiKey: string): QueueApi {
  const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json", accept: "application/json" };
  const send = jobSender(baseUrl, headers);

  return {
    run(endpoint: string, input: unknown, options: RunOptions = {}): Promise<Job> {
      return send("run", endpoint, `${queueUrl(baseUrl, endpoint)}/run`, "POST", payload(input, options), options.signal);
    },

    status(endpoint: string, jobId: string, options: { signal?: AbortSignal } = {}): Promise<Job> {
      return send("status", jobId, `${queueUrl(baseUrl, endpoint)}/status/${encodeURIComponent(jobId)}`, "GET", undefined, options.signal);
    },

    cancel(endpoint: string, jobId: string): Promise<Job> {
      return send("cancel", jobId, `${queueUrl(baseUrl, endpoint)}/cancel/${encodeURIComponent(jobId)}`, "POST");
    },

    runsync(endpoint: string, input: unknown, options: RunSyncOptions = {}): Promise<Job> {
      return runsyncUntilFinal(baseUrl, headers, send, endpoint, input, options);
    },
  };
}

type Headers = Record<string, string>;
type JobSender = ReturnType<typeof jobSender>;

/** One queue request whose answer must be a job. */
function jobSender(baseUrl: string, headers: Headers) {
  return async function send(operation: string, endpoint: string, url: string, method: string, body?: unknown, signal?: AbortSignal): Promise<Job> {
    const response = await httpRequest(baseUrl, url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
    return asJob(operation, endpoint, response);
  };
}

/** The job a queue route answered, or the catalogue error for its status. */
function asJob(operation: string, endpoint: string, response: HttpResponse): Job {
  const body = response.json as Partial<Job> | undefined;
  // 400 with a job body is a job the endpoint rejected: FAILED, still a job.
  if (body && typeof body.id === "string" && typeof body.status === "string" && (response.status < 300 || response.status === 400)) {
    return body as Job;
  }
  if (response.status === 404) throw errors.NOT_FOUND(operation.startsWith("status") || operation === "cancel" ? "Job or endpoint" : "Endpoint", endpoint);
  throw httpError(operation, response);
}

const payload = (input: unknown, options: RunOptions) => ({
  input,
  ...(options.webhook ? { webhook: options.webhook } : {}),
  ...(options.policy ? { policy: options.policy } : {}),
});

/** runsync's loop (see createQueueApi's runsync): the first POST, then polls until the job is final or the deadline passes. */
async function runsyncUntilFinal(baseUrl: string, headers: Headers, send: JobSender, endpoint: string, input: unknown, options: RunSyncOptions): Promise<Job> {
  const base = queueUrl(baseUrl, endpoint);
  const deadline = options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
  const waitFor = () => Math.round(Math.max(MIN_WAIT_MS, Math.min(MAX_WAIT_MS, options.waitMs ?? DEFAULT_WAIT_MS, deadline - Date.now())));
  let job = await send("runsync", endpoint, `${base}/runsync?wait=${waitFor()}`, "POST", payload(input, options), options.signal);
  let statusSync = true;
  let failures = 0;
  let fresh = true;
  while (!isFinalJob(job)) {
    if (fresh) options.onPending?.(job);
    fresh = false;
    if (Date.now() >= deadline) return job;
    const id = job.id;
    try {
      if (statusSync) {
        const next = await pollStatusSync(baseUrl, headers, `${base}/status-sync/${encodeURIComponent(id)}?wait=${waitFor()}`, id, options.signal);
        if (!next) {
          // No status-sync route here (or the job is gone): /status tells which.
          statusSync = false;
          continue;
        }
        job = next;
      } else {
        await sleep(Math.min(1000, Math.max(0, deadline - Date.now())), undefined, { signal: options.signal });
        job = { ...(await send("status", id, `${base}/status/${encodeURIComponent(id)}`, "GET", undefined, options.signal)), id };
      }
      failures = 0;
      fresh = true;
    } catch (error) {
      failures = nextFailureCount(error, failures, endpoint, id, options.signal);
      await sleep(Math.min(5000, 250 * 2 ** failures), undefined, { signal: options.signal });
    }
  }
  return job;
}

/** GET /status-sync/<id>: the job, or null where the platform answers 404/405 (no such route, or no such job). */
async function pollStatusSync(baseUrl: string, headers: Headers, url: string, id: string, signal: AbortSignal | undefined): Promise<Job | null> {
  const response = await httpRequest(baseUrl, url, { method: "GET", headers, signal });
  if (response.status === 404 || response.status === 405) return null;
  return { ...asJob("status-sync", id, response), id };
}

/** A failed poll: rethrows what retrying cannot fix (abort, auth, not found, persistent failure), else the failure count so far. */
function nextFailureCount(error: unknown, failures: number, endpoint: string, id: string, signal: AbortSignal | undefined): number {
  if (signal?.aborted) throw error;
  if (isSvcError(error) && (error.code === "AUTH_FAILED" || error.code === "NOT_FOUND")) throw error;
  const transient = !isSvcError(error) || error.code === "PLATFORM_UNREACHABLE" || /HTTP (429|5\d\d)/.test(error.message);
  if (!transient || ++failures > MAX_POLL_FAILURES) throw errors.JOB_WAIT_FAILED(endpoint, id, error);
  return failures;
}
