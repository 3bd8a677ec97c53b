/**
 * `workerLogLines` and `deletedEndpoints`: worker output with times and a cursor, for `svc logs`
 * (--since, --follow) and `svc run`'s live output. A deleted endpoint's lines stay readable for
 * the store's LOG_RETENTION_MS (docs/dev-server.md, "Worker logs").
 */
import { errors } from "../../core/errors.ts";
import type { Store } from "../store/index.ts";

/** What these resolvers read of the store. */
type LogStore = Pick<Store, "endpoints" | "logs">;

const DEFAULT_LIMIT = 200;
const MAX_LIMIT = 10_000;
/** The longest `wait` a request may hold (ms): below proxies' and clients' idle timeouts. */
export const MAX_LOG_WAIT_MS = 25_000;

function parseLimit(limit: unknown): number {
  const n = limit === undefined || limit === null ? DEFAULT_LIMIT : Number(limit);
  if (!Number.isInteger(n) || n < 1 || n > MAX_LIMIT) throw errors.BAD_REQUEST(`limit must be an integer from 1 to ${MAX_LIMIT}`);
  return n;
}

function parseCursor(after: unknown): number | undefined {
  if (after === undefined || after === null) return undefined;
  const n = Number(after);
  if (typeof after !== "string" || !/^\d{1,15}$/.test(after) || !Number.isSafeInteger(n))
    throw errors.BAD_REQUEST("after must be a cursor from an earlier workerLogLines answer");
  return n;
}

function parseSince(since: unknown): number | undefined {
  if (since === undefined || since === null) return undefined;
  const ms = typeof since === "string" ? Date.parse(since) : Number.NaN;
  if (!Number.isFinite(ms)) throw errors.BAD_REQUEST("since must be an ISO 8601 time, such as 2026-11-23T14:00:00Z");
  return ms;
}

function parseWait(wait: unknown): number {
  if (wait === undefined || wait === null) return 0;
  const n = Number(wait);
  if (!Number.isInteger(n) || n < 0 || n > MAX_LOG_WAIT_MS) throw errors.BAD_REQUEST(`wait must be an integer from 0 to ${MAX_LOG_WAIT_MS} (ms)`);
  return n;
}

/** With `wait` (ms) and no line to answer yet, the answer waits for the next line, up to that long (`svc logs -f`). */
export async function workerLogLines(store: LogStore, args: Record<string, unknown>) {
  const id = String(args.endpointId);
  if (!store.endpoints.get(id) && !store.logs.retired(id)) throw errors.NOT_FOUND("Endpoint", id);
  const options = { after: parseCursor(args.after), since: parseSince(args.since), limit: parseLimit(args.limit) };
  const wait = parseWait(args.wait);
  const read = () => {
    store.logs.flush();
    return store.logs.lines(id, options);
  };
  let lines = read();
  if (lines.length === 0 && wait > 0 && (await store.logs.nextLine(id, wait))) lines = read();
  return lines.map((l) => ({ cursor: String(l.id), at: new Date(l.ts).toISOString(), workerId: l.workerId, line: l.line }));
}

export function deletedEndpoints(store: LogStore, name: unknown) {
  return store.logs
    .retiredEndpoints(name === undefined || name === null ? undefined : String(name))
    .map((e) => ({ id: e.id, name: e.name, environmentId: e.environmentId, deletedAt: new Date(e.deletedAt).toISOString() }));
}
