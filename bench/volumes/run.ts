/**
 * Volume uploads to the embedded platform (not a test: prints figures, asserts nothing).
 * Run: npx tsx bench/volumes/run.ts [--gb 2]
 *
 * An embedded platform in this process and the real CLI in a child process (`svc volume upload`,
 * the AWS SDK v3 over the volume's S3 API, parts of max(8 MiB, size / 10,000)):
 * 1. throughput of one file of --gb GB (random bytes, written to a temporary folder first);
 * 2. the same size to another key, the upload killed (SIGKILL) once half of its parts are on the
 *    platform, then run again: the bytes the rerun sent, against the file's size and the bytes
 *    that were missing (docs/volumes.md, "Resumable uploads");
 * 3. small objects (--small N, default 1000, of 4 KiB under a three-folder key, 8 at a time through
 *    the AWS SDK): PUT, GET and DELETE rates, the cost of reaching a key one folder fd at a time.
 * --small-only skips 1 and 2.
 */
import { execFile, spawn } from "node:child_process";
import { randomFillSync } from "node:crypto";
import { open, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { startTestPlatform, tempDir } from "../../test/platform/_support.ts";
import { createPlatformClient } from "../../core/client/index.ts";
import { partCount } from "../../cli/volume/etag.ts";
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";

/** Step 3: `n` small objects put, got and deleted, 8 requests at a time; prints each rate. */
async function smallObjects(n: number) {
  const creds = await client.s3Access({});
  const s3 = new S3Client({ endpoint: creds.endpointUrl, forcePathStyle: true, region: "local", credentials: creds, maxAttempts: 1 });
  const bucket = (await client.createVolume({ name: "bench-small", size: 1 })).id;
  const body = Buffer.alloc(4096, 7);
  const key = (i: number) => `a/b${i % 10}/c${i % 7}/k${i}`;
  const rate = async (what: string, fn: (i: number) => Promise<unknown>) => {
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < n) await fn(next++);
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    console.log(`small objects: ${n} ${what} in ${seconds.toFixed(2)} s, ${(n / seconds).toFixed(0)}/s`);
  };
  await rate("PUTs", (i) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: key(i), Body: body })));
  await rate("GETs", (i) => s3.send(new GetObjectCommand({ Bucket: bucket, Key: key(i) })).then((g) => g.Body!.transformToByteArray()));
  await rate("DELETEs", (i) => s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key(i) })));
}

const args = process.argv.slice(2);
const gb = Number(args[args.indexOf("--gb") + 1] || 2) || 2;
const size = Math.round(gb * 1e9);
const small = Number(args[args.indexOf("--small") + 1] || 1000) || 1000;
const BIN = new URL("../../bin/svc.mjs", import.meta.url).pathname;

const platform = await startTestPlatform({ log: () => {} });
const client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
const work = await tempDir("svc-bench-volumes-");
const env = { ...process.env, NO_COLOR: "1", CI: "1", PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey };
const svc = (cliArgs: string[]) =>
  new Promise<string>((resolve, reject) =>
    execFile(process.execPath, [BIN, ...cliArgs, "--root", work], { env, maxBuffer: 64 * 1024 * 1024 }, (e, so, se) =>
      e ? reject(new Error(se)) : resolve(so),
    ),
  );

try {
  if (args.includes("--small-only")) {
    await smallObjects(small);
    process.exit(0);
  }
  await client.createVolume({ name: "bench", size: Math.ceil(gb * 3) + 1 });
  const file = join(work, "weights.bin");
  const handle = await open(file, "w");
  const chunk = Buffer.alloc(64 * 1024 * 1024);
  for (let written = 0; written < size; written += chunk.length) {
    randomFillSync(chunk);
    await handle.write(chunk, 0, Math.min(chunk.length, size - written));
  }
  await handle.close();
  const parts = partCount(size);
  console.log(`file: ${size} bytes (${gb} GB), ${parts} parts`);

  const started = performance.now();
  await svc(["volume", "upload", file, "bench:one/weights.bin", "--json"]);
  const seconds = (performance.now() - started) / 1000;
  console.log(`upload: ${seconds.toFixed(1)} s, ${(size / 1e6 / seconds).toFixed(0)} MB/s (CLI start, local ETag and whole-object check included)`);

  // Interrupted at 50 %: killed once half of the parts are whole on the platform.
  const staging = join(platform.dataDir, "volume-staging");
  const child = spawn(process.execPath, [BIN, "volume", "upload", file, "bench:two/weights.bin", "--root", work], { env, stdio: "ignore" });
  let exited = false;
  child.once("exit", () => (exited = true));
  let seen = 0;
  while (!exited && seen < parts / 2) {
    const uploads = (await readdir(staging)).filter((d) => d.startsWith("mpu_"));
    seen = uploads.length ? (await readdir(join(staging, uploads[0]!))).filter((n) => n.endsWith(".json")).length : 0;
    await new Promise((r) => setTimeout(r, 20));
  }
  child.kill("SIGKILL");
  if (!exited) await new Promise((r) => child.once("exit", r));
  const rerunStarted = performance.now();
  const rerun = JSON.parse(await svc(["volume", "upload", file, "bench:two/weights.bin", "--json"])).uploaded[0] as {
    sentBytes: number;
    reusedBytes: number;
    action: string;
  };
  const rerunSeconds = (performance.now() - rerunStarted) / 1000;
  console.log(
    `interrupted at ${seen}/${parts} parts: the rerun (${rerun.action}) sent ${rerun.sentBytes} bytes (${((rerun.sentBytes / size) * 100).toFixed(1)} % of the file), ` +
      `reused ${rerun.reusedBytes} bytes already there, in ${rerunSeconds.toFixed(1)} s`,
  );
  await smallObjects(small);
} finally {
  await platform.dispose();
  await rm(work, { recursive: true, force: true });
}
