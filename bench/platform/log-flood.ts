/**
 * The platform's CPU per MB of worker log lines (issue 27), the capture path alone: 64 MB of
 * 100-character lines through captureWorkerOutput (split, log rate) into the logs store (SQLite in
 * memory, trimmed to 5,000 lines), with no rate, the default rate, and a rate that drops nearly all.
 * Prints figures, asserts nothing.   npx tsx bench/platform/log-flood.ts
 */
import { PassThrough } from "node:stream";
import { EventEmitter } from "node:events";
import { captureWorkerOutput } from "../../platform/workers/worker-logs.ts";
import { openDb } from "../../platform/store/db.ts";
import { createLogsRepo, DEFAULT_LOG_CHARS } from "../../platform/store/logs.ts";
import { DEFAULT_LOG_RATE } from "../../platform/limit-options.ts";

const MB = 64;
const block = ("x".repeat(99) + "\n").repeat(1000);
async function run(label: string, rate: { perSecond: number; burst: number }) {
  const db = openDb(":memory:");
  const logs = createLogsRepo(db, { lines: 5000, chars: DEFAULT_LOG_CHARS });
  const stdout = new PassThrough();
  const proc = Object.assign(new EventEmitter(), { stdout, stderr: null }) as unknown as Parameters<typeof captureWorkerOutput>[0]; // a worker process: its stdout and exit
  const w = { lastLines: [], exited: false } as unknown as Parameters<typeof captureWorkerOutput>[1];
  let kept = 0;
  const sink = {
    line: (text: string) => {
      kept++;
      logs.append("ep", "wk", text);
    },
    note: (text: string) => logs.append("ep", "wk", text),
  };
  captureWorkerOutput(proc, w, rate, sink);
  const cpu = process.cpuUsage();
  const writes = (MB * 1024 * 1024) / block.length;
  for (let i = 0; i < writes; i++) {
    stdout.write(block);
    if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve)); // let the capture read, as a pipe would
  }
  stdout.end();
  await new Promise((resolve) => setImmediate(resolve));
  logs.flush();
  const used = process.cpuUsage(cpu);
  (proc as unknown as EventEmitter).emit("exit");
  console.log(`${label}: ${((used.user + used.system) / 1000 / MB).toFixed(2)} ms CPU per MB, ${kept} lines kept`);
  db.close();
}
await run("warm-up", DEFAULT_LOG_RATE);
await run("no rate (every line stored, trimmed to 5,000)", { perSecond: 1e15, burst: 1e15 });
await run("default rate 1 MiB/s, 8 MiB burst", DEFAULT_LOG_RATE);
await run("all dropped (1 KB burst)", { perSecond: 1, burst: 1024 });
