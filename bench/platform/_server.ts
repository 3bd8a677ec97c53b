/** The platform under benchmark, in its own process: prints {url, apiKey, pid} on one line. */
import { startPlatform } from "../../platform/server.ts";

const dataDir = process.argv[2];
if (!dataDir) throw new Error("usage: _server.ts <dataDir>");
const platform = await startPlatform({
  dataDir,
  port: 0,
  rateLimits: false, // the hosted limits (1000 /run per 10 s) would cap the throughput run
  log: (line) => process.stderr.write(`[platform] ${line}\n`),
  runsyncRetentionMs: Number(process.env.BENCH_RUNSYNC_RETENTION_MS ?? 60_000),
  runRetentionMs: Number(process.env.BENCH_RUN_RETENTION_MS ?? 30 * 60_000),
});
process.stdout.write(`${JSON.stringify({ url: platform.url, apiKey: platform.apiKey, pid: process.pid })}\n`);
const stop = () => void platform.close().then(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
