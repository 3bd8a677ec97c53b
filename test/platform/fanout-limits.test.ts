/**
 * Fan-out under the platform's rate limits (docs/deploy.md "Fan-out", "Pacing"): the platform keeps
 * its limits and answers 429 with Retry-After; both clients (runtime/python/svc/_pacing.py and the
 * typed client's pacing, cli/commands/_typed-client.ts) wait and send again, so that two 2,500-input
 * `.map`s back to back complete in input order with no item failed, and `.spawn`s over the /run
 * limit are all accepted. Each client counts the 429s it was answered (a wrapper around its
 * transport), so the test knows the limit was met. The limits are the hosted ones scaled to a short
 * window (400 runsync per second instead of 2,000 per 10 s) to keep the test short.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { renderTypedClient } from "../../cli/commands/_typed-client.ts";
import { createPlatformClient } from "../../core/client/index.ts";
import type { Manifest } from "../../core/types.ts";
import { buildFixtureArtifact, FIXTURE, startTestPlatform, uploadArtifact, type TestPlatform } from "./_support.ts";
import { TSC } from "../_support/tools.ts";

const RUNTIME = fileURLToPath(new URL("../../runtime/python", import.meta.url));
const ITEMS = 2500;
const SPAWNS = 12; // over the /run limit of 5 per window

const SCRIPT = `
import json, time
from svc import _http
from app.jobs import work

refused = [0]
send = _http.request
def counting(*args, **kwargs):
    resp = send(*args, **kwargs)
    refused[0] += resp.status == 429
    return resp
_http.request = counting

started = time.monotonic()
first = list(work.map([{"op": "echo", "value": i} for i in range(${ITEMS})], concurrency=32))
second = list(work.map([{"op": "echo", "value": i} for i in range(${ITEMS}, ${2 * ITEMS})], concurrency=32))
ordered = first + second == [{"echo": i} for i in range(${2 * ITEMS})]
mapped_s = time.monotonic() - started
jobs = [work.spawn(op="echo", value=i) for i in range(${SPAWNS})]
got = [job.get(timeout=60) for job in jobs]
print(json.dumps({"ordered": ordered, "count": len(first) + len(second), "spawned": got == [{"echo": i} for i in range(${SPAWNS})],
                  "remote": work.remote(op="echo", value="r"), "refused": refused[0], "mapped_s": round(mapped_s, 1)}), flush=True)
`;

const MAIN_TS = (apiKey: string) => `import { createClient, type WorkInput } from "./client.js";
let refused = 0;
const counting: typeof fetch = async (input, init) => {
  const answer = await fetch(input, init);
  if (answer.status === 429) refused++;
  return answer;
};
const client = createClient({ apiKey: ${JSON.stringify(apiKey)}, timeoutMs: 60_000, fetch: counting });
const started = Date.now();
const out: unknown[] = [];
for (const from of [0, ${ITEMS}]) {
  const inputs = Array.from({ length: ${ITEMS} }, (_, i): WorkInput => ({ op: "echo", value: from + i }));
  for await (const result of client.work.map(inputs, { concurrency: 32 })) out.push(result);
}
const ordered = out.length === ${2 * ITEMS} && out.every((r, i) => JSON.stringify(r) === JSON.stringify({ echo: i }));
const mappedS = (Date.now() - started) / 1000;
const handles = await Promise.all(Array.from({ length: ${SPAWNS} }, (_, i) => client.work.spawn({ op: "echo", value: i })));
const got = await Promise.all(handles.map((job) => job.get(60_000)));
const spawned = got.every((r, i) => JSON.stringify(r) === JSON.stringify({ echo: i }));
console.log(JSON.stringify({ ordered, count: out.length, spawned, refused, mappedS }));
`;

let p: TestPlatform;
let urls: Record<string, string> = {};
let scratch: string | undefined;

beforeAll(async () => {
  p = await startTestPlatform({
    rateLimits: {
      windowMs: 1000,
      runsync: { requests: 400, concurrent: 400 },
      run: { requests: 5, concurrent: 200 },
      status: { requests: 400, concurrent: 0 },
    },
  });
  const client = createPlatformClient(p);
  const { appId, buildId } = await uploadArtifact(p, await buildFixtureArtifact(), "platform-app");
  const env = await client.createEnvironment(appId, "production");
  await client.saveEndpoint({
    name: "work",
    type: "QB",
    template: { imageName: "svc/worker-cpu:py3.11" },
    instanceIds: ["cpu3c-2-4"],
    workersMin: 2,
    workersMax: 2,
    environmentId: env.id,
    buildId,
  });
  const switched = await client.deployBuildToEnvironment(env.id, buildId);
  urls = Object.fromEntries(switched.endpoints.map((e) => [e.name, e.url]));
}, 60_000);
afterAll(async () => {
  await p?.dispose();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** Runs a client program to its end; answers the JSON line it printed last. */
async function runClient(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<Record<string, any>> {
  const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk));
  const code = await new Promise((resolve) => child.once("exit", resolve));
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as Record<string, any>;
}

describe("fan-out under the platform's rate limits", () => {
  it("Python: two 2,500-input .maps back to back complete in order, .spawn over the /run limit is accepted; 429s were met and waited out", async () => {
    const result = await runClient(process.env.SVC_PYTHON ?? "python3", ["-c", SCRIPT], FIXTURE, {
      ...process.env,
      PYTHONPATH: RUNTIME,
      PLATFORM_API_URL: p.url,
      PLATFORM_API_KEY: p.apiKey,
      SVC_ENV: "",
      SVC_BUILD_ID: "",
      SVC_ENDPOINT_NAME: "",
    });
    expect(result).toMatchObject({ ordered: true, count: 2 * ITEMS, spawned: true, remote: { echo: "r" } });
    expect(result.refused).toBeGreaterThan(0);
    expect(result.mapped_s).toBeGreaterThanOrEqual((2 * ITEMS) / 400 - 1.5); // the limit held: at most 400 per second went through
  }, 240_000);

  it("TypeScript (the typed client): the same, through a caller's own fetch", async () => {
    scratch = await mkdtemp(join(tmpdir(), "svc-fanout-limits-"));
    const manifest = JSON.parse(await readFile(join(FIXTURE, "svc_manifest.json"), "utf8")) as Manifest;
    const deployed = Object.fromEntries(Object.entries(manifest.endpoints).filter(([name]) => urls[name]));
    await writeFile(join(scratch, "client.ts"), renderTypedClient({ ...manifest, endpoints: deployed, urls }));
    await writeFile(join(scratch, "package.json"), '{ "type": "module" }\n');
    await writeFile(join(scratch, "main.ts"), MAIN_TS(p.apiKey));
    const options = { strict: true, target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", lib: ["ES2022", "DOM"], outDir: "dist" };
    await writeFile(join(scratch, "tsconfig.json"), JSON.stringify({ compilerOptions: options, files: ["main.ts"] }));
    const compiled = await new Promise<{ code: number; out: string }>((resolve) =>
      execFile(process.execPath, [TSC, "-p", "."], { cwd: scratch }, (error, stdout) => resolve({ code: error ? 1 : 0, out: stdout })),
    );
    expect(compiled.code, compiled.out).toBe(0);
    const result = await runClient(process.execPath, [join(scratch, "dist", "main.js")], scratch);
    expect(result).toMatchObject({ ordered: true, count: 2 * ITEMS, spawned: true });
    expect(result.refused).toBeGreaterThan(0);
    expect(result.mappedS).toBeGreaterThanOrEqual((2 * ITEMS) / 400 - 1.5);
  }, 240_000);
});
