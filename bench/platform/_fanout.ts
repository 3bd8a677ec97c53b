/**
 * `.map` over N no-op inputs from both clients (issue 28), beside the hot path's 32-client runsync
 * on the same endpoint in the same run: each caller is its own process outside any worker (Python:
 * the runtime's fanout.py, finding the endpoint by app and environment with the key; TypeScript: the
 * client `svc client` writes, compiled by tsc and run with plain node), concurrency 32 like the
 * runsync clients. Each prints its throughput and its RSS after 10 % and after all of the inputs.
 */
import { execFileSync, execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createPlatformClient } from "../../core/client/index.ts";
import type { Manifest } from "../../core/types.ts";
import { renderTypedClient } from "../../cli/commands/_typed-client.ts";
import { FIXTURE, RUNTIME_SDK, uploadArtifact, type BuiltArtifact } from "../../test/platform/_support.ts";

const REPO = resolve(import.meta.dirname, "../..");
const CONCURRENCY = 32;

export interface FanOutSide {
  perSecond: number;
  rssTenthMb: number;
  rssEndMb: number;
  /** TypeScript: the live heap after a full collection (RSS keeps the heap V8 reserved, live or not). */
  heapTenthMb?: number;
  heapEndMb?: number;
}

/** Deploys the fixture's `work` endpoint into an environment (what `svc deploy` makes) with `workers` warm workers; answers its id and URL. */
export async function deployToEnvironment(p: { url: string; apiKey: string }, artifact: BuiltArtifact, workers: number) {
  const client = createPlatformClient(p);
  const { appId, buildId } = await uploadArtifact(p, artifact, "platform-app");
  const env = (await client.getEnvironment(appId, "production")) ?? (await client.createEnvironment(appId, "production"));
  await client.saveEndpoint({
    name: "work",
    type: "QB",
    template: { imageName: "svc/worker-cpu:py3.11" },
    instanceIds: ["cpu3c-2-4"],
    workersMin: workers,
    workersMax: workers,
    environmentId: env.id,
    buildId,
  });
  const switched = await client.deployBuildToEnvironment(env.id, buildId);
  const work = switched.endpoints.find((e) => e.name === "work")!;
  return { id: work.id, url: work.url };
}

const PYTHON_CALLER = `
import json, resource, sys, time
from app.jobs import work
n = int(sys.argv[1])
def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize() / 2**20
t0 = time.perf_counter(); tenth = None
for i, out in enumerate(work.map(({"op": "noop"} for _ in range(n)), concurrency=${CONCURRENCY})):
    if i + 1 == n // 10: tenth = rss_mb()
print(json.dumps({"perSecond": n / (time.perf_counter() - t0), "rssTenthMb": tenth, "rssEndMb": rss_mb()}))
`;

const TS_CALLER = (apiKey: string) => `import { createClient } from "./client.js";
const n = Number(process.argv[2]);
const client = createClient({ apiKey: ${JSON.stringify(apiKey)} });
const rss = () => process.memoryUsage().rss / 2 ** 20;
const heap = () => (globalThis.gc?.(), process.memoryUsage().heapUsed / 2 ** 20);
function* inputs() { for (let i = 0; i < n; i++) yield { op: "noop" }; }
const t0 = performance.now();
let i = 0, tenth = 0, heapTenth = 0, paused = 0;
for await (const _ of client.work.map(inputs(), { concurrency: ${CONCURRENCY} })) {
  if (++i !== Math.floor(n / 10)) continue;
  tenth = rss();
  const before = performance.now();
  heapTenth = heap();
  paused = performance.now() - before;
}
const perSecond = n / ((performance.now() - t0 - paused) / 1000);
console.log(JSON.stringify({ perSecond, rssTenthMb: tenth, rssEndMb: rss(), heapTenthMb: heapTenth, heapEndMb: heap() }));
`;

const run = (file: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) =>
  new Promise<FanOutSide>((done, fail) =>
    execFile(file, args, { ...options, maxBuffer: 1 << 20, timeout: 600_000 }, (error, stdout, stderr) =>
      error ? fail(new Error(`${file} failed: ${stderr}`)) : done(JSON.parse(stdout) as FanOutSide),
    ),
  );

/** Python `.map` over `n` no-op inputs, from the fixture app's folder (its manifest), outside any worker. */
export function pythonMap(p: { url: string; apiKey: string }, n: number): Promise<FanOutSide> {
  const env = { ...process.env, PYTHONPATH: resolve(RUNTIME_SDK, ".."), PLATFORM_API_URL: p.url, PLATFORM_API_KEY: p.apiKey, SVC_ENV: "production" };
  return run(process.env.SVC_PYTHON ?? "python3", ["-c", PYTHON_CALLER, String(n)], { cwd: FIXTURE, env });
}

/** Writes and compiles the typed client of the `work` endpoint and its caller under `dir` (once). */
export function buildTsCaller(dir: string, p: { apiKey: string }, workUrl: string): string {
  const manifest = JSON.parse(readFileSync(join(FIXTURE, "svc_manifest.json"), "utf8")) as Manifest;
  writeFileSync(join(dir, "client.ts"), renderTypedClient({ ...manifest, endpoints: { work: manifest.endpoints.work! }, urls: { work: workUrl } }));
  writeFileSync(join(dir, "main.ts"), TS_CALLER(p.apiKey));
  writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
  const options = {
    strict: true,
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    lib: ["ES2022", "DOM"],
    types: ["node"],
    typeRoots: [join(REPO, "node_modules/@types")],
    outDir: "dist",
  };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: options, files: ["main.ts"] }));
  execFileSync(process.execPath, [join(REPO, "node_modules/typescript/bin/tsc"), "-p", "."], { cwd: dir, stdio: "inherit" });
  return join(dir, "dist", "main.js");
}

/** The compiled TypeScript caller's `.map` over `n` no-op inputs. */
export function typescriptMap(main: string, n: number): Promise<FanOutSide> {
  return run(process.execPath, ["--expose-gc", main, String(n)], { cwd: resolve(main, "..") });
}
