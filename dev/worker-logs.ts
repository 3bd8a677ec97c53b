/**
 * Worker output through the platform's GraphQL `workerLogLines` (docs/dev-server.md, "Worker
 * logs"): one request for several endpoints (one aliased field each), and a follower that polls
 * with each endpoint's cursor. `svc logs` and `svc run` use it, against any platform that serves
 * the field (embedded or hosted: same client code).
 */
import { errors, isSvcError } from "../core/errors.ts";
import type { PlatformClient } from "../core/client/index.ts";

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
}

export type LogsClient = Pick<PlatformClient, "graphql" | "url">;

/** The lines of several endpoints in one request, in the order of `queries`. */
export async function fetchWorkerLogLines(client: LogsClient, queries: LogQuery[]): Promise<WorkerLogLine[][]> {
  if (queries.length === 0) return [];
  const variables: Record<string, unknown> = {};
  const declarations: string[] = [];
  const fields: string[] = [];
  queries.forEach((query, i) => {
    declarations.push(`$e${i}: String!, $a${i}: String, $s${i}: String, $l${i}: Int`);
    fields.push(`l${i}: workerLogLines(endpointId: $e${i}, after: $a${i}, since: $s${i}, limit: $l${i}) { cursor at workerId line }`);
    Object.assign(variables, { [`e${i}`]: query.endpointId, [`a${i}`]: query.after ?? null, [`s${i}`]: query.since ?? null, [`l${i}`]: query.limit ?? null });
  });
  const document = `query workerLogLines(${declarations.join(", ")}) { ${fields.join(" ")} }`;
  try {
    const data = await client.graphql<Record<string, WorkerLogLine[]>>("workerLogLines", document, variables);
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

  async function pollOnce(): Promise<void> {
    const targets = options.targets();
    for (const id of cursors.keys()) if (!targets.some((t) => t.endpointId === id)) cursors.delete(id);
    if (targets.length === 0) return;
    try {
      const queries = targets.map((t) => {
        const after = cursors.get(t.endpointId);
        return after ? { endpointId: t.endpointId, after, limit: POLL_LIMIT } : { endpointId: t.endpointId, since, limit: POLL_LIMIT };
      });
      const answers = await fetchWorkerLogLines(client, queries);
      targets.forEach((target, i) => {
        const lines = answers[i]!;
        for (const line of lines) options.onLine(target, line);
        if (lines.length) cursors.set(target.endpointId, lines[lines.length - 1]!.cursor);
      });
    } catch (error) {
      options.onError?.(error);
      if (isSvcError(error) && error.code === "LOGS_UNAVAILABLE") stopped = true; // asking again cannot help
    }
  }

  function schedule() {
    if (stopped) return;
    timer = setTimeout(() => {
      polling = pollOnce().finally(schedule);
    }, options.intervalMs ?? POLL_INTERVAL_MS);
  }

  polling = pollOnce().finally(schedule);
  return {
    /** Resolves after the poll in flight, if any (tests). */
    settled: () => polling,
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      clearTimeout(timer);
      await polling;
      await pollOnce();
    },
  };
}
export type WorkerLogFollower = ReturnType<typeof followWorkerLogs>;
