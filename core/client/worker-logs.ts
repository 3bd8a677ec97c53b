/**
 * Worker output through the platform's GraphQL `workerLogLines` (docs/dev-server.md, "Worker
 * logs"): one request for several endpoints (one aliased field each), and a follower that polls
 * with each endpoint's cursor. `svc logs` and `svc run` use it, against any platform that serves
 * the field (embedded or hosted: same client code).
 */
import { errors, isSvcError } from "../errors.ts";
import type { PlatformClient } from "./index.ts";

export interface WorkerLogLine {
  /** Pass it back as `after` to get the lines that follow. */
  cursor: string;
  /** ISO time the platform received the line. */
  at: string;
  workerId: string;
  line: string;
}

export interface LogQuery {
  endpointId: string;
  after?: string;
  /** ISO time. */
  since?: string;
  limit?: number;
  /** ms: with no line yet, the platform answers at the next one, up to this long (a long poll). */
  wait?: number;
}

export type LogsClient = Pick<PlatformClient, "graphql" | "url">;

/** The lines of several endpoints in one request, in the order of `queries`. */
export async function fetchWorkerLogLines(client: LogsClient, queries: LogQuery[], signal?: AbortSignal): Promise<WorkerLogLine[][]> {
  if (queries.length === 0) return [];
  const variables: Record<string, unknown> = {};
  const declarations: string[] = [];
  const fields: string[] = [];
  queries.forEach((query, i) => {
    // `wait` only when asked: a platform without the argument still answers the rest
    const wait = query.wait === undefined ? ["", ""] : [`, $w${i}: Int`, `, wait: $w${i}`];
    declarations.push(`$e${i}: String!, $a${i}: String, $s${i}: String, $l${i}: Int${wait[0]}`);
    fields.push(`l${i}: workerLogLines(endpointId: $e${i}, after: $a${i}, since: $s${i}, limit: $l${i}${wait[1]}) { cursor at workerId line }`);
    Object.assign(variables, { [`e${i}`]: query.endpointId, [`a${i}`]: query.after ?? null, [`s${i}`]: query.since ?? null, [`l${i}`]: query.limit ?? null });
    if (query.wait !== undefined) variables[`w${i}`] = query.wait;
  });
  const document = `query workerLogLines(${declarations.join(", ")}) { ${fields.join(" ")} }`;
  try {
    const data = await client.graphql<Record<string, WorkerLogLine[]>>("workerLogLines", document, variables, signal);
    return queries.map((_, i) => data[`l${i}`] ?? []);
  } catch (error) {
    if (isSvcError(error) && error.code === "PLATFORM_ERROR" && /Cannot query field "workerLogLines"/.test(error.message))
      throw errors.LOGS_UNAVAILABLE(client.url);
    throw error;
  }
}

export interface FollowTarget {
  endpointId: string;
  /** Printed before each of its lines. */
  label: string;
}

export interface LogFollowerOptions {
  /** The endpoints to follow, asked again on every poll (the dev server's provisioned ones). */
  targets(): FollowTarget[];
  onLine(target: FollowTarget, line: WorkerLogLine): void;
  onError?(error: unknown): void;
  /** Lines before this ISO time are not shown (default: when the follower starts). */
  since?: string;
  /** Endpoint id → cursor of the last line already shown: the first poll starts after it. */
  after?: Record<string, string>;
  intervalMs?: number;
  /**
   * One target only: each request waits at the platform up to this long for the next line (a
   * long poll), so a line shows as it comes and a new request is open at once after each answer.
   * A platform without `wait` is polled every intervalMs instead.
   */
  waitMs?: number;
}

const POLL_INTERVAL_MS = 500;
/** Most lines one poll takes per endpoint; the rest come with the next poll. */
const POLL_LIMIT = 1000;

/** Polls the targets' new lines until stopped; `stop()` takes one last poll first. */
export function followWorkerLogs(client: LogsClient, options: LogFollowerOptions) {
  const since = options.since ?? new Date().toISOString();
  const cursors = new Map<string, string>(Object.entries(options.after ?? {}));
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let polling: Promise<void> = Promise.resolve();
  let waitMs = options.waitMs;
  /** Ends the long poll in flight (stop). */
  let inFlight: AbortController | undefined;
  /** The last poll answered lines or waited at the platform: the next one starts at once. */
  let again = false;

  /** One poll; `wait`: as a long poll (ms), or undefined (the last poll of stop(), a platform without it). */
  async function pollOnce(wait: number | undefined): Promise<void> {
    again = false;
    const targets = options.targets();
    for (const id of cursors.keys()) if (!targets.some((t) => t.endpointId === id)) cursors.delete(id);
    if (targets.length === 0) return;
    try {
      const long = wait !== undefined && targets.length === 1 ? { wait } : {};
      const queries = targets.map((t) => {
        const after = cursors.get(t.endpointId);
        return after ? { endpointId: t.endpointId, after, limit: POLL_LIMIT, ...long } : { endpointId: t.endpointId, since, limit: POLL_LIMIT, ...long };
      });
      inFlight = long.wait !== undefined ? new AbortController() : undefined;
      const answers = await fetchWorkerLogLines(client, queries, inFlight?.signal);
      again = long.wait !== undefined;
      targets.forEach((target, i) => {
        const lines = answers[i]!;
        for (const line of lines) options.onLine(target, line);
        if (lines.length) cursors.set(target.endpointId, lines[lines.length - 1]!.cursor);
      });
    } catch (error) {
      if (inFlight?.signal.aborted) return; // stopped: the last poll takes its lines
      if (wait !== undefined && isSvcError(error) && /Unknown argument "wait"/.test(error.message)) {
        waitMs = undefined; // a platform without the long poll: polled instead
        again = true;
        return;
      }
      options.onError?.(error);
      if (isSvcError(error) && error.code === "LOGS_UNAVAILABLE") stopped = true; // asking again cannot help
    }
  }

  function schedule() {
    if (stopped) return;
    timer = setTimeout(
      () => {
        polling = pollOnce(waitMs).finally(schedule);
      },
      again ? 0 : (options.intervalMs ?? POLL_INTERVAL_MS),
    );
  }

  polling = pollOnce(waitMs).finally(schedule);
  return {
    /** Resolves after the poll in flight, if any (tests). */
    settled: () => polling,
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      clearTimeout(timer);
      inFlight?.abort();
      await polling;
      await pollOnce(undefined);
    },
  };
}
export type WorkerLogFollower = ReturnType<typeof followWorkerLogs>;
