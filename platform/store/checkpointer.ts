/**
 * WAL checkpoints on a worker thread (docs/platform.md, "Hot path"). A checkpoint copies committed
 * pages into the database file and syncs it (with synchronous=NORMAL a commit never syncs; only a
 * checkpoint does): a few ms that SQLite's auto-checkpoint spends inside whichever commit crosses
 * its threshold, on the thread that answers every request. Here a second connection checkpoints
 * PASSIVE-ly every CHECKPOINT_MS beside the writer (WAL allows it; a passive checkpoint never
 * blocks one), and the main connection's auto-checkpoint stays only as a backstop far above, for
 * a thread that cannot keep up. If the thread fails, auto-checkpoint returns to SQLite's default.
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type { Db } from "./db.ts";

const CHECKPOINT_MS = 500;
/** Auto-checkpoint threshold while the thread runs (pages of 4 KiB: 64 MiB of WAL). */
const BACKSTOP_PAGES = 16_384;
const SQLITE_DEFAULT_PAGES = 1000;

// Plain CommonJS for `eval`: it runs the same from sources and from the built package.
const THREAD = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
const timer = setInterval(() => db.pragma("wal_checkpoint(PASSIVE)"), workerData.everyMs);
parentPort.once("message", () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export interface Checkpointer {
  /** Stops checkpointing (the main connection's close checkpoints what is left). */
  stop(): void;
}

export function startCheckpointer(db: Db, file: string, onError: (error: unknown) => void): Checkpointer {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const worker = new Worker(THREAD, { eval: true, workerData: { driver, file, everyMs: CHECKPOINT_MS } });
  worker.unref();
  db.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
  let stopped = false;
  worker.once("error", (error) => {
    if (stopped || !db.open) return; // closed meanwhile (its folder may be gone already)
    db.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_PAGES}`);
    onError(error);
  });
  return {
    stop() {
      stopped = true;
      worker.postMessage("stop");
    },
  };
}
