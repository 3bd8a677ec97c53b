/**
 * The volumes' S3 API against a worker racing it (issue 26): a hostile process swaps, with
 * renameat2(RENAME_EXCHANGE) in a loop, a folder of its volume with a symlink to a host folder (or to
 * another volume's folder), or a file with a FIFO, while clients PUT, GET, List and Delete the keys
 * under it. The racer runs on the host in the volume's folder: the same folder a worker's mount is,
 * and the S3 API cannot tell who renamed (a worker's sandbox adds nothing to this race but setup).
 * Nothing may appear, be read, be listed or be deleted outside the volume, and the FIFO may not stall
 * another volume's calls. SVC_RACE_SECONDS (default 2) sets how long each race runs.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { gqlOk, startTestPlatform, tempDir, type TestPlatform } from "./_support.ts";

const RACER = new URL("./_rename_race.py", import.meta.url).pathname;
const SECONDS = Number(process.env.SVC_RACE_SECONDS ?? 2);
const SECRET = "outside-secret-9f3a";
const TIMEOUT_MS = SECONDS * 1000 + 30_000;

let p: TestPlatform;
let s3: S3Client;

async function createVolume(name: string): Promise<string> {
  const r = await gqlOk(p, `mutation ($i: CreateNetworkVolumeInput!) { createNetworkVolume(input: $i) { id } }`, { i: { name, size: 1 } });
  return r.createNetworkVolume.id;
}
const volumeDir = (id: string) => join(p.dataDir, "volumes", id);

/** Starts the racer; resolves once it swaps, and its `done` with the number of swaps. */
async function race(volume: string, mode: "dir" | "fifo", target: string) {
  const proc = spawn("python3", [RACER, volumeDir(volume), mode, target, String(SECONDS)], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  proc.stdout.on("data", (d: Buffer) => (out += d));
  await new Promise<void>((resolve, reject) => {
    proc.stdout.on("data", () => out.includes("ready") && resolve());
    proc.on("exit", (code) => reject(new Error(`racer exited ${code}: ${out}`)));
  });
  const done = once(proc, "exit").then(([code]) => {
    if (code !== 0) throw new Error(`racer exited ${code}: ${out}`);
    return Number(out.trim().split("\n").pop());
  });
  return { done, running: () => proc.exitCode === null };
}

/** Calls `fn` in `lanes` parallel loops while `running()`; returns what they collected. */
async function loops<T>(lanes: number, running: () => boolean, fn: (lane: number, i: number) => Promise<T>): Promise<T[]> {
  const seen: T[] = [];
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      for (let i = 0; running(); i++) seen.push(await fn(lane, i));
    }),
  );
  return seen;
}

const outcome = (promise: Promise<unknown>) =>
  promise.then(
    (v) => v,
    (e: Error) => e.name,
  );

beforeAll(async () => {
  p = await startTestPlatform();
  const creds = (await gqlOk(p, `{ s3Credentials { endpointUrl accessKeyId secretAccessKey } }`)).s3Credentials;
  s3 = new S3Client({ endpoint: creds.endpointUrl, forcePathStyle: true, region: "local", credentials: creds, maxAttempts: 1 });
});
afterAll(async () => p?.dispose());

describe.runIf(process.platform === "linux")("the S3 API while a worker swaps its volume's folders with symlinks", () => {
  it(
    "writes, reads, lists and deletes nothing outside the volume (a host folder)",
    async () => {
      const hostile = await createVolume("race-host");
      const outside = await tempDir("svc-race-outside-");
      await writeFile(join(outside, "secret.txt"), SECRET);
      await writeFile(join(outside, "keep.txt"), "keep");
      const seen: unknown[] = [];
      const listedAPut = () => seen.some((s) => typeof s === "string" && s.startsWith("race/k-"));
      // A call lands between two swaps by chance (each takes several steps, any of which may meet the
      // link): on a slow machine one race of SECONDS can end with none of its ~15 PUTs through. Races
      // run again, up to 5, until calls went through while one ran.
      for (let attempt = 0; attempt < 5 && !(seen.includes("put") && listedAPut()); attempt++) {
        const r = await race(hostile, "dir", outside);
        const calls = await loops(4, r.running, async (lane, i) => {
          const key = `race/k-${attempt}-${lane}-${i}`;
          const op = i % 4;
          if (op === 0) return outcome(s3.send(new PutObjectCommand({ Bucket: hostile, Key: key, Body: "planted" })).then(() => "put"));
          if (op === 1) return outcome(s3.send(new GetObjectCommand({ Bucket: hostile, Key: "race/secret.txt" })).then((g) => g.Body!.transformToString()));
          if (op === 2)
            return outcome(s3.send(new ListObjectsV2Command({ Bucket: hostile, Prefix: "race/" })).then((l) => (l.Contents ?? []).map((c) => c.Key).join(",")));
          return outcome(s3.send(new DeleteObjectCommand({ Bucket: hostile, Key: "race/keep.txt" })).then(() => "deleted"));
        });
        expect(await r.done).toBeGreaterThan(100); // swaps
        expect(calls.length).toBeGreaterThan(8);
        seen.push(...calls);
      }
      // the API kept working between the swaps: an API failing every call would pass the checks below
      expect(seen).toContain("put");
      expect(listedAPut()).toBe(true); // a list that found a put
      const escaped = (await readdir(outside)).filter((name) => !["secret.txt", "keep.txt"].includes(name));
      expect(escaped.length, `${escaped.length} files written outside the volume in ${SECONDS} s`).toBe(0);
      expect((await readdir(outside)).sort()).toEqual(["keep.txt", "secret.txt"]);
      expect(seen.filter((s) => typeof s === "string" && (s.includes(SECRET) || s.includes("secret.txt") || s.includes("keep.txt")))).toEqual([]);
    },
    TIMEOUT_MS,
  );

  it(
    "never reads, lists or deletes another volume's objects",
    async () => {
      const victim = await createVolume("race-victim");
      const hostile = await createVolume("race-thief");
      await s3.send(new PutObjectCommand({ Bucket: victim, Key: "secret.txt", Body: SECRET }));
      await s3.send(new PutObjectCommand({ Bucket: victim, Key: "keep.txt", Body: "keep" }));
      const r = await race(hostile, "dir", volumeDir(victim));
      const seen = await loops(4, r.running, async (_lane, i) => {
        const op = i % 3;
        if (op === 0) return outcome(s3.send(new GetObjectCommand({ Bucket: hostile, Key: "race/secret.txt" })).then((g) => g.Body!.transformToString()));
        if (op === 1)
          return outcome(s3.send(new ListObjectsV2Command({ Bucket: hostile, Prefix: "race/" })).then((l) => (l.Contents ?? []).map((c) => c.Key).join(",")));
        return outcome(s3.send(new DeleteObjectCommand({ Bucket: hostile, Key: "race/keep.txt" })).then(() => "deleted"));
      });
      const swaps = await r.done;
      expect(swaps).toBeGreaterThan(100);
      expect(seen.length).toBeGreaterThan(8);
      expect(seen).toContain("deleted"); // calls succeeded between the swaps, on the thief's own volume
      expect(seen.filter((s) => typeof s === "string" && (s.includes(SECRET) || s.includes("secret.txt") || s.includes("keep.txt")))).toEqual([]);
      expect((await readdir(volumeDir(victim))).sort()).toEqual(["keep.txt", "secret.txt"]);
    },
    TIMEOUT_MS,
  );

  it(
    "refuses a FIFO swapped in for a file, and another volume's calls keep answering within 2 s",
    async () => {
      const other = await createVolume("race-bystander");
      const hostile = await createVolume("race-fifo");
      await s3.send(new PutObjectCommand({ Bucket: other, Key: "hello.txt", Body: "hello" }));
      await mkdir(join(volumeDir(hostile), "race"), { recursive: true });
      const r = await race(hostile, "fifo", "");
      const timed = (ms: number) => ({ abortSignal: AbortSignal.timeout(ms) });
      const [hostileSeen, bystander] = await Promise.all([
        loops(8, r.running, () =>
          outcome(
            s3
              .send(new GetObjectCommand({ Bucket: hostile, Key: "race/file" }), timed(10_000))
              .then((g) => g.Body!.transformToString().then((t) => `read ${t.length}`)),
          ),
        ),
        loops(1, r.running, async () => {
          const started = Date.now();
          const got = await outcome(s3.send(new GetObjectCommand({ Bucket: other, Key: "hello.txt" }), timed(5_000)).then((g) => g.Body!.transformToString()));
          return { got, ms: Date.now() - started };
        }),
      ]);
      await r.done;
      expect(bystander.length).toBeGreaterThan(2);
      expect(bystander.filter((b) => b.got !== "hello" || b.ms > 2000)).toEqual([]);
      const kinds = new Set(hostileSeen);
      expect([...kinds].filter((k) => !["read 1024", "InvalidObjectState", "NoSuchKey"].includes(String(k)))).toEqual([]);
      expect(kinds.has("InvalidObjectState")).toBe(true);
    },
    TIMEOUT_MS,
  );
});
