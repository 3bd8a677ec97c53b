/**
 * The floor of the bench's comparison: a relay that makes the same four process crossings as a svc
 * runsync (client → server → worker → server → client) over the same transports (TCP from the
 * client, a Unix socket to the worker) and does nothing else: no queue, no SQLite, no auth, no
 * timers. Its worker (_relay_worker.py) speaks through svc's own Python HTTP client. What svc
 * measures above this relay is svc's own work; what the relay measures above the peer is the cost
 * of the extra two crossings (docs/platform.md, "Hot path"). Prints {url, pid} on one line.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";

const socketPath = process.argv[2];
if (!socketPath) throw new Error("usage: _relay.ts <worker socket path>");

const waitingClients = new Map<string, ServerResponse>();
const queued: string[] = [];
let parkedWorker: ServerResponse | undefined;
let nextId = 0;

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (text += chunk));
    req.on("end", () => resolve(text));
    req.on("error", reject);
  });
const answer = (res: ServerResponse, text: string) => res.writeHead(200, { "content-type": "application/json" }).end(text);

/** A client's runsync: its job goes to the parked worker at once, or waits for the worker's next request. */
const client = createServer(async (req, res) => {
  const input = JSON.parse(await readBody(req)).input;
  const id = String(++nextId);
  waitingClients.set(id, res);
  const job = JSON.stringify({ id, input });
  if (parkedWorker) {
    const worker = parkedWorker;
    parkedWorker = undefined;
    answer(worker, `{"next":[${job}]}`);
  } else queued.push(job);
});

/** The worker's results (one JSON object per line, as svc's jobs-done): answered to their clients; the worker waits for its next job. */
const worker = createServer(async (req, res) => {
  for (const line of (await readBody(req)).split("\n")) {
    if (!line) continue;
    const { id, output } = JSON.parse(line) as { id: string; output: unknown };
    const waiting = waitingClients.get(id);
    waitingClients.delete(id);
    if (waiting) answer(waiting, JSON.stringify({ id, status: "COMPLETED", output }));
  }
  const job = queued.shift();
  if (job) answer(res, `{"next":[${job}]}`);
  else parkedWorker = res;
});

for (const server of [client, worker]) server.keepAliveTimeout = 60_000;
await new Promise<void>((resolve) => worker.listen(socketPath, resolve));
client.listen(0, "127.0.0.1", () => {
  const address = client.address();
  const port = typeof address === "object" && address ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, pid: process.pid })}\n`);
});
const stop = () => process.exit(0);
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
