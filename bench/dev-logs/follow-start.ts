/**
 * How soon `svc logs <endpoint> -f` is following (not a test: prints figures, asserts nothing).
 * Run: npx tsx bench/dev-logs/follow-start.ts [--runs 5] [--sources]
 *
 * A real embedded platform in this process with a deployed app; the CLI as users run it (the
 * packed package under plain node; `--sources`: this checkout through tsx), started against a
 * logging proxy that timestamps each request it sends. Prints, per run, the time from the spawn to
 * each request, the last being the follow request (the long poll, `wait`) left open at the platform.
 */
import { spawn } from "node:child_process";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTemporaryPlatform } from "../../platform/temporary.ts";
import { BIN, runSvc } from "../../test/_support/cli.ts";
import { builtPackage } from "../cli/_built-package.ts";

const args = process.argv.slice(2);
const runs = Number(args[args.indexOf("--runs") + 1] || 5) || 5;
const scratch = await mkdtemp(join(tmpdir(), "svc-bench-follow-"));
const bin = args.includes("--sources") ? BIN : builtPackage(scratch);

const platform = await startTemporaryPlatform();
const root = join(scratch, "app");
await cp(new URL("../../fixtures/deploy-app/", import.meta.url).pathname, root, { recursive: true });
const env = { ...process.env, NO_COLOR: "1", PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey };
const deployed = await runSvc(["deploy", "--json", "--root", root], { env, timeout: 180_000 });
if (deployed.code !== 0) throw new Error(deployed.stderr);

let startedAt = 0;
let seen: string[] = [];
let followOpen: (() => void) | undefined;
const target = new URL(platform.url);
const proxy = createServer((req, res) => {
  let body = "";
  req.on("data", (chunk) => (body += chunk));
  req.on("end", () => {
    const at = performance.now() - startedAt;
    const name = /"(?:operationName|query)":"(?:query )?(\w+)/.exec(body)?.[1] ?? req.url;
    const long = /"w0":\d+/.test(body);
    seen.push(`${at.toFixed(0)} ms ${name}${long ? " (follow, open)" : ""}`);
    if (long) followOpen?.();
    const forward = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on("error", () => res.destroy()); // the platform closing under a request still open
    forward.end(body);
  });
});
await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
const proxyUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;

console.log(`svc logs hello -f (${bin === BIN ? "sources, tsx" : "packed package, node"}), ${runs} runs:`);
const totals: number[] = [];
for (let i = 0; i < runs; i++) {
  seen = [];
  const open = new Promise<void>((resolve) => (followOpen = resolve));
  startedAt = performance.now();
  const child = spawn(process.execPath, [bin, "logs", "hello", "-f", "--root", root], { env: { ...env, PLATFORM_API_URL: proxyUrl }, stdio: "ignore" });
  await open;
  totals.push(performance.now() - startedAt);
  child.kill("SIGINT");
  await new Promise((resolve) => child.on("exit", resolve));
  console.log(`  run ${i + 1}: ${seen.join(", ")}`);
}
totals.sort((a, b) => a - b);
const nodeStart = performance.now();
await new Promise((resolve) => spawn(process.execPath, ["-e", "0"]).on("exit", resolve));
console.log(`(plain \`node -e 0\` on this machine now: ${(performance.now() - nodeStart).toFixed(0)} ms)`);
console.log(`spawn → follow request open: median ${totals[Math.floor(totals.length / 2)]!.toFixed(0)} ms, min ${totals[0]!.toFixed(0)} ms`);
proxy.close();
await platform.dispose();
await rm(scratch, { recursive: true, force: true });
