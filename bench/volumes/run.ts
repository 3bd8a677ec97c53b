/**
 * Volume uploads to the embedded platform (not a test: prints figures, asserts nothing).
 * Run: npx tsx bench/volumes/run.ts [--gb 2]
 *
 * An embedded platform in this process and the real CLI in a child process (`svc volume upload`,
 * the AWS SDK v3 over the volume's S3 API, parts of max(8 MiB, size / 10,000)):
 * 1. throughput of one file of --gb GB (random bytes, written to a temporary folder first);
 * 2. the same size to another key, the upload killed (SIGKILL) once half of its parts are on the
 *    platform, then run again: the bytes the rerun sent, against the file's size and the bytes
 *    that were missing (docs/volumes.md, "Resumable uploads").
 */
import { execFile, spawn } from "node:child_process";
import { randomFillSync } from "node:crypto";
import { open, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { startTestPlatform, tempDir } from "../../test/platform/_support.ts";
import { createPlatformClient } from "../../core/client/index.ts";
import { partCount } from "../../cli/volume/etag.ts";

const args = process.argv.slice(2);
const gb = Number(args[args.indexOf("--gb") + 1] || 2) || 2;
const size = Math.round(gb * 1e9);
const BIN = new URL("../../bin/svc.mjs", import.meta.url).pathname;

const platform = await startTestPlatform({ log: () => {} });
const client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
const work = await tempDir("svc-bench-volumes-");
const env = { ...process.env, NO_COLOR: "1", CI: "1", PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey };
const svc = (cliArgs: string[]) =>
  new Promise<string>((resolve, reject) =>
    execFile(process.execPath, [BIN, ...cliArgs, "--root", work], { env, maxBuffer: 64 * 1024 * 1024 }, (e, so, se) => (e ? reject(new Error(se)) : resolve(so))),
  );

try {
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
  const rerun = JSON.parse(await svc(["volume", "upload", file, "bench:two/weights.bin", "--json"])).uploaded[0] as { sentBytes: number; reusedBytes: number; action: string };
  const rerunSeconds = (performance.now() - rerunStarted) / 1000;
  console.log(
    `interrupted at ${seen}/${parts} parts: the rerun (${rerun.action}) sent ${rerun.sentBytes} bytes (${((rerun.sentBytes / size) * 100).toFixed(1)} % of the file), ` +
      `reused ${rerun.reusedBytes} bytes already there, in ${rerunSeconds.toFixed(1)} s`,
  );
} finally {
  await platform.dispose();
  await rm(work, { recursive: true, force: true });
}
