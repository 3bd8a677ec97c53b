/**
 * Fan-out against a real platform (docs/deploy.md "Fan-out"), from both clients, outside any worker:
 * Python (runtime/python/svc/fanout.py: a script imports the fixture app and finds its deployed
 * endpoints by app and environment with the user's key) and the typed TypeScript client `svc client`
 * writes (cli/commands/_typed-client.ts, compiled strictly). Each: `.map` over 300 inputs (input
 * order, a failing item named, returned or thrown), `.spawn` (get, cancel of a running job), and a
 * `.map` during which the test SIGKILLs a worker holding a job: every item still completes (the
 * platform hands the job back).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { renderTypedClient } from "../../cli/commands/_typed-client.ts";
import type { Manifest } from "../../core/types.ts";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { buildFixtureArtifact, FIXTURE, startTestPlatform, uploadArtifact, waitFor, type TestPlatform } from "./_support.ts";
import { TSC } from "../_support/tools.ts";

const RUNTIME = fileURLToPath(new URL("../../runtime/python", import.meta.url));

const SCRIPT = `
import json, sys, time
from app.jobs import work
from svc import RemoteCallError

def emit(**fields):
    print(json.dumps(fields), flush=True)

items = [{"op": "echo", "value": i} for i in range(300)]
items[57] = {"op": "fail", "message": "item fifty-seven broke"}
out = list(work.map(items, concurrency=16, return_exceptions=True))
ordered = all(out[i] == {"echo": i} for i in range(300) if i != 57)
try:
    list(work.map(items, concurrency=16))
    raised = None
except RemoteCallError as err:
    raised = {"index": err.index, "message": str(err)}
singles = list(work.map(["noop", "echo"]))  # single values: the first parameter (op)
emit(ordered=ordered, failed=str(out[57]), failed_index=getattr(out[57], "index", None), traceback=getattr(out[57], "traceback", None), raised=raised, singles=singles)

emit(remote=work.remote(op="echo", value="r"), got=work.spawn(op="echo", value="s").get(timeout=30))
slow = work.spawn(op="sleep", seconds=30)
while slow.status()["status"] != "IN_PROGRESS":
    time.sleep(0.05)
cancelled = slow.cancel()
try:
    slow.get(timeout=10)
    after = "completed"
except RemoteCallError as err:
    after = err.status
emit(cancelled=cancelled["status"], after=after, status=slow.status()["status"])

emit(kill="now")
survived = list(work.map([{"op": "sleep", "seconds": 0.05} for _ in range(200)], concurrency=8))
emit(survived=len(survived), all_ok=all(s == {"slept": 0.05} for s in survived))
`;

let p: TestPlatform;
let client: PlatformClient;
let urls: Record<string, string> = {};
let scratch: string | undefined;

beforeAll(async () => {
  p = await startTestPlatform();
  client = createPlatformClient(p);
  const { appId, buildId } = await uploadArtifact(p, await buildFixtureArtifact(), "platform-app");
  const env = await client.createEnvironment(appId, "production");
  for (const name of ["work", "api"]) {
    await client.saveEndpoint({
      name,
      type: name === "api" ? "LB" : "QB",
      template: { imageName: "svc/worker-cpu:py3.11" },
      instanceIds: ["cpu3c-2-4"],
      workersMin: name === "work" ? 2 : 0,
      workersMax: 2,
      environmentId: env.id,
      buildId,
    });
  }
  const switched = await client.deployBuildToEnvironment(env.id, buildId);
  urls = Object.fromEntries(switched.endpoints.map((e) => [e.name, e.url]));
}, 60_000);
afterAll(async () => {
  await p?.dispose();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** Runs a client program that prints one JSON line per step; on `{"kill": ...}` SIGKILLs a worker holding a job. */
async function runClient(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<Array<Record<string, any>>> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk));
  const lines: Array<Record<string, any>> = [];
  for await (const line of createInterface({ input: child.stdout! })) {
    const message = JSON.parse(line) as Record<string, any>;
    lines.push(message);
    if (message.kill) {
      const busy = await waitFor(
        "a worker holding a job",
        () => [...p.context.supervisor.workers.values()].find((w) => w.pid && p.context.queue.jobsOf(w.id).size > 0),
        20_000,
        5,
      );
      process.kill(busy.pid!, "SIGKILL");
    }
  }
  const code = await new Promise((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", resolve)));
  expect(code, stderr).toBe(0);
  return lines;
}

const FOUND_SCRIPT = `
import json
from app.jobs import work
from svc import RemoteCallError
try:
    print(json.dumps({"remote": work.remote(op="echo", value="found"), "mapped": list(work.map([{"value": v} for v in (1, 2, 3)]))}))
except RemoteCallError as err:
    print(json.dumps({"error": str(err)}))
`;

describe("the Python SDK finds the platform as the CLI does", () => {
  it("with no PLATFORM_API_* exported: the deploy state's platform and URLs with the state folder's key; with nothing to find, an error that says where it looked and what to export", async () => {
    const project = await mkdtemp(join(tmpdir(), "svc-fanout-find-"));
    try {
      await cp(join(FIXTURE, "app"), join(project, "app"), { recursive: true });
      await cp(join(FIXTURE, "svc_manifest.json"), join(project, ".svc", "svc_manifest.json"));
      const stateDir = join(project, "platform-state");
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        PYTHONPATH: RUNTIME,
        SVC_PLATFORM_DIR: stateDir,
        PLATFORM_API_URL: "",
        PLATFORM_API_KEY: "",
        SVC_API_BASE: "",
      };
      for (const name of ["SVC_ENV", "SVC_BUILD_ID", "SVC_ENDPOINT_NAME"]) delete env[name];
      const python = process.env.SVC_PYTHON ?? "python3";
      const [nothing] = await runClient(python, ["-c", FOUND_SCRIPT], { cwd: project, env });
      expect(nothing!.error).toMatch(
        /no URL for endpoint 'work': looked at: PLATFORM_API_URL \(unset\); .*deployments \(no deploy state\); .*platform-state \(not running/,
      );
      expect(nothing!.error).toMatch(/export PLATFORM_API_URL and PLATFORM_API_KEY/);

      await mkdir(join(project, ".svc", "deployments"), { recursive: true });
      const manifest = JSON.parse(await readFile(join(FIXTURE, "svc_manifest.json"), "utf8")) as Manifest;
      const state = {
        version: 1,
        app: manifest.app,
        environment: "production",
        platform: p.url,
        buildId: "b",
        deployedAt: new Date().toISOString(),
        urls,
        manifest,
      };
      await writeFile(join(project, ".svc", "deployments", "production.json"), JSON.stringify(state));
      const [noKey] = await runClient(python, ["-c", FOUND_SCRIPT], { cwd: project, env });
      expect(noKey!.error).toMatch(/production\.json: platform http:\/\/127\.0\.0\.1:\d+, but PLATFORM_API_KEY is unset/);

      await mkdir(stateDir, { recursive: true });
      await writeFile(join(stateDir, "api-key"), `${p.apiKey}\n`, { mode: 0o600 });
      const [found] = await runClient(python, ["-c", FOUND_SCRIPT], { cwd: project, env });
      expect(found).toEqual({ remote: { echo: "found" }, mapped: [{ echo: 1 }, { echo: 2 }, { echo: 3 }] });
    } finally {
      await rm(project, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("fan-out outside a worker", () => {
  it("Python: .map in input order with a failing item named, .spawn get/cancel, .remote, and a worker killed mid-map loses nothing", async () => {
    const lines = await runClient(process.env.SVC_PYTHON ?? "python3", ["-c", SCRIPT], {
      cwd: FIXTURE,
      env: { ...process.env, PYTHONPATH: RUNTIME, PLATFORM_API_URL: p.url, PLATFORM_API_KEY: p.apiKey, SVC_ENV: "", SVC_BUILD_ID: "", SVC_ENDPOINT_NAME: "" },
    });
    const [mapped, handles, cancel, , survived] = lines;
    expect(mapped).toMatchObject({ ordered: true, failed_index: 57, raised: { index: 57 } });
    expect(mapped!.failed).toContain("item 57 ({'op': 'fail', 'message': 'item fifty-seven broke'})");
    expect(mapped!.failed).toMatch(/^item 57 \(.*\): ValueError: item fifty-seven broke \(work on endpoint 'work', job \S+, FAILED\)$/);
    expect(mapped!.traceback).toMatch(/^Traceback[\s\S]*ValueError: item fifty-seven broke/);
    expect(mapped!.raised.message).toContain("item 57");
    expect(mapped!.singles).toEqual([null, { echo: null }]);
    expect(handles).toEqual({ remote: { echo: "r" }, got: { echo: "s" } });
    expect(cancel).toEqual({ cancelled: "CANCELLED", after: "CANCELLED", status: "CANCELLED" });
    expect(survived).toEqual({ survived: 200, all_ok: true });
  }, 120_000);
  it("TypeScript (the typed client): .map as an async iterable in input order with a failing item named, .spawn get/cancel, and a worker killed mid-map loses nothing", async () => {
    scratch = await mkdtemp(join(tmpdir(), "svc-fanout-ts-"));
    const manifest = JSON.parse(await readFile(join(FIXTURE, "svc_manifest.json"), "utf8")) as Manifest;
    const deployed = Object.fromEntries(Object.entries(manifest.endpoints).filter(([name]) => urls[name])); // the client of what this test deployed
    await writeFile(join(scratch, "client.ts"), renderTypedClient({ ...manifest, endpoints: deployed, urls }));
    await writeFile(join(scratch, "package.json"), '{ "type": "module" }\n');
    await writeFile(
      join(scratch, "main.ts"),
      `import { createClient, MapItemError, type WorkInput } from "./client.js";
const client = createClient({ apiKey: ${JSON.stringify(p.apiKey)}, timeoutMs: 60_000 });
const emit = (fields: Record<string, unknown>) => console.log(JSON.stringify(fields));
const inputs: WorkInput[] = Array.from({ length: 300 }, (_, i) => (i === 57 ? { op: "fail", message: "item fifty-seven broke" } : { op: "echo", value: i }));
const out: unknown[] = [];
for await (const result of client.work.map(inputs, { concurrency: 16, returnExceptions: true })) out.push(result);
const ordered = out.length === 300 && out.every((r, i) => i === 57 || JSON.stringify(r) === JSON.stringify({ echo: i }));
const item = out[57];
let thrown = "";
try {
  for await (const _ of client.work.map(inputs, { concurrency: 16 })) void _;
} catch (error) {
  thrown = (error as Error).message;
}
async function* lazily() {
  for (let i = 0; i < 40; i++) yield { op: "echo", value: i };
}
let fromGenerator = 0;
for await (const _ of client.work.map(lazily(), { concurrency: 4 })) fromGenerator++;
emit({ ordered, index: item instanceof MapItemError ? item.index : null, failed: item instanceof MapItemError ? item.message : String(item), traceback: item instanceof MapItemError ? item.traceback : null, thrown, fromGenerator });
const got = await (await client.work.spawn({ op: "echo", value: "s" })).get(30_000);
const slow = await client.work.spawn({ op: "sleep", seconds: 30 });
while ((await slow.status()).status !== "IN_PROGRESS") await new Promise((resolve) => setTimeout(resolve, 50));
const cancelled = (await slow.cancel()).status;
const after = await slow.get(10_000).then(() => "completed", (error: Error) => error.message);
emit({ got, cancelled, after, status: (await slow.status()).status });
emit({ kill: "now" });
let survived = 0;
for await (const slept of client.work.map(Array.from({ length: 200 }, (): WorkInput => ({ op: "sleep", seconds: 0.05 })), { concurrency: 8 })) if (JSON.stringify(slept) === '{"slept":0.05}') survived++;
emit({ survived });
`,
    );
    await writeFile(
      join(scratch, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true,
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          lib: ["ES2022", "DOM"],
          outDir: "dist",
        },
        files: ["main.ts"],
      }),
    );
    const compiled = await new Promise<{ code: number; out: string }>((resolve) =>
      execFile(process.execPath, [TSC, "-p", "."], { cwd: scratch }, (error, stdout) => resolve({ code: error ? 1 : 0, out: stdout })),
    );
    expect(compiled.code, compiled.out).toBe(0);
    const [mapped, handles, , survived] = await runClient(process.execPath, [join(scratch, "dist", "main.js")], { cwd: scratch });
    expect(mapped).toMatchObject({ ordered: true, index: 57, fromGenerator: 40 });
    expect(mapped!.failed).toMatch(
      /^item 57 \({"op":"fail","message":"item fifty-seven broke"}\): ValueError: item fifty-seven broke \(job \S+ of work ended FAILED\)$/,
    );
    expect(mapped!.thrown).toContain("item 57");
    expect(mapped!.traceback).toMatch(/^Traceback[\s\S]*ValueError: item fifty-seven broke/);
    expect(handles).toMatchObject({ got: { echo: "s" }, cancelled: "CANCELLED", status: "CANCELLED" });
    expect(handles!.after).toContain("CANCELLED");
    expect(survived).toEqual({ survived: 200 });
  }, 120_000);
});
