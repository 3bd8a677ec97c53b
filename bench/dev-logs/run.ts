/**
 * Worker-output latency of `svc run` (not a test: prints figures, asserts nothing).
 * Run: npx tsx bench/dev-logs/run.ts [--calls 20]
 *
 * An embedded platform in this process, fixtures/dev-app plus an endpoint whose function prints
 * the time, the dev server in lazy mode; each call's printed time is compared with when its
 * `[stamp] …` line reaches the dev server's output (docs/dev-server.md, "Worker logs": the
 * platform stores lines every 200 ms, the dev server polls every 500 ms).
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createPlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import { startDevServer } from "../../dev/index.ts";
import { copyDevApp, removeDir, startTestPlatform } from "../../test/dev/_dev-platform.ts";

const args = process.argv.slice(2);
const calls = Number(args[args.indexOf("--calls") + 1] || 20) || 20;

const platform = await startTestPlatform();
const client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
const root = await copyDevApp();
await writeFile(
  join(root, "workers", "stamp.py"),
  'import time\nfrom svc import Endpoint\n\n\n@Endpoint(name="stamp", cpu="cpu3c-2-4", workers=(0, 1), idle_timeout=60)\ndef stamp() -> int:\n    print(f"stamp {time.time() * 1000:.0f}")\n    return 1\n',
);
const delays: number[] = [];
const logger = createLogger("info", (line) => {
  const printed = /\[stamp\] stamp (\d+)/.exec(line);
  if (printed) delays.push(Date.now() - Number(printed[1]));
});
const server = await startDevServer({ root, client, port: 0, logger, reload: false });
try {
  for (let i = 0; i < calls; i++) {
    await fetch(`${server.url}/stamp/runsync`, { method: "POST", body: "{}" });
    // spaced at random (0.7–1.3 s) so the calls fall at every phase of the 500 ms poll
    await new Promise((r) => setTimeout(r, 700 + Math.random() * 600));
  }
} finally {
  await server.close();
  await platform.close();
  await removeDir(root);
}
delays.sort((a, b) => a - b);
const at = (q: number) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))];
console.log(`print() → svc run output: ${delays.length}/${calls} lines, p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${delays.at(-1)} ms`);
