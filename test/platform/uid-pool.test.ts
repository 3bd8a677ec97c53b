/**
 * The workers' uid pool (platform/workers/uid-pool.ts) on real files: one uid per app, kept across
 * a restart, never the same uid for two apps of two platforms sharing the claims folder (also when
 * they claim at once), a claim of a platform whose state folder is gone taken again, and the two
 * catalogue errors.
 */
import { mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_WORKER_UIDS, parseUidRange, WorkerUidPool } from "../../platform/workers/uid-pool.ts";
import { tempDir } from "./_support.ts";

const platformDir = async (root: string, name: string) => {
  const dir = join(root, name);
  await mkdir(dir);
  return dir;
};

describe("the workers' uid pool", () => {
  it("reads SVC_WORKER_UIDS as first-last, and refuses anything else with WORKER_UIDS_INVALID", () => {
    expect(parseUidRange(undefined)).toEqual(DEFAULT_WORKER_UIDS);
    expect(parseUidRange(" ")).toEqual(DEFAULT_WORKER_UIDS);
    expect(parseUidRange("300000-300009")).toEqual({ first: 300_000, last: 300_009 });
    for (const bad of ["abc", "10-20", "300009-300000", "0-5", `1000-${2 ** 31}`])
      expect(() => parseUidRange(bad), bad).toThrow(expect.objectContaining({ code: "WORKER_UIDS_INVALID" }));
  });

  it("gives each app its own uid, the same one after a restart, and none twice across platforms", async () => {
    const root = await tempDir("svc-uid-pool-");
    const claims = join(root, "claims");
    const range = { first: 300_000, last: 300_002 };
    const one = await platformDir(root, "one");
    const two = await platformDir(root, "two");
    const a = await new WorkerUidPool(one, range, claims).userFor("app_a");
    expect(a).toEqual({ uid: 300_000, gid: 300_000 });
    expect(await new WorkerUidPool(one, range, claims).userFor("app_a")).toEqual(a); // a restart keeps it
    const b = await new WorkerUidPool(two, range, claims).userFor("app_a"); // same app id, another platform: another app
    const c = await new WorkerUidPool(two, range, claims).userFor("app_c");
    expect(new Set([a.uid, b.uid, c.uid]).size).toBe(3);
    expect(await readFile(join(claims, String(b.uid)), "utf8")).toBe(`${two}\tapp_a\n`);
    await expect(new WorkerUidPool(one, range, claims).userFor("app_d")).rejects.toMatchObject({ code: "WORKER_UIDS_EXHAUSTED" });
    // platform two's state folder is gone: its claims are free again
    await rm(two, { recursive: true });
    const d = await new WorkerUidPool(one, range, claims).userFor("app_d");
    expect([b.uid, c.uid]).toContain(d.uid);
    await rm(root, { recursive: true, force: true });
  });

  it("hands out distinct uids to platforms claiming at the same moment", async () => {
    const root = await tempDir("svc-uid-pool-");
    const claims = join(root, "claims");
    const range = { first: 300_000, last: 300_099 };
    const dirs = await Promise.all(Array.from({ length: 12 }, (_, i) => platformDir(root, `p${i}`)));
    const users = await Promise.all(dirs.flatMap((dir) => ["x", "y"].map((app) => new WorkerUidPool(dir, range, claims).userFor(app))));
    expect(new Set(users.map((u) => u.uid)).size).toBe(24);
    await rm(root, { recursive: true, force: true });
  });
});
