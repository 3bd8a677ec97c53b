/**
 * WAL checkpoints run on their own thread (docs/platform.md, "Hot path"): the connection that
 * answers requests only appends to the WAL, yet committed pages reach the database file.
 */
import { statSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createStore, type Store } from "../../platform/store/index.ts";
import { tempDir, waitFor } from "./_support.ts";

let store: Store | undefined;
let dir: string | undefined;
afterEach(async () => {
  store?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("WAL checkpoints", () => {
  it("copy committed pages into the database file from another thread, the main connection keeping only a far backstop", async () => {
    dir = await tempDir("svc-checkpoint-");
    const file = join(dir, "platform.db");
    store = createStore(file);
    expect(store.db.pragma("wal_autocheckpoint", { simple: true })).toBeGreaterThan(10_000);
    const before = statSync(file).size;
    const insert = store.db.prepare("INSERT INTO meta (key, value) VALUES (?, ?)");
    for (let i = 0; i < 200; i++) insert.run(`k${i}`, "x".repeat(4000)); // ~200 pages, far below the backstop
    expect(statSync(file).size).toBe(before); // still only in the WAL
    await waitFor("the checkpoint thread to copy the pages", async () => statSync(file).size > before + 500_000, 10_000);
  });
});
