/**
 * Python fan-out against a real platform (runtime/python/svc/fanout.py, docs/deploy.md "Fan-out"):
 * a script outside any worker imports the fixture app and finds its deployed endpoints by app and
 * environment with the user's key, then `.map` over 300 inputs (input order, a failing item named,
 * return_exceptions), `.spawn` (get, cancel of a running job), `.remote`, and a `.map` during which
 * the test kills a worker: every item still completes (the platform hands the job back).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { buildFixtureArtifact, FIXTURE, startTestPlatform, uploadArtifact, waitFor, type TestPlatform } from "./_support.ts";

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
emit(ordered=ordered, failed=str(out[57]), failed_index=getattr(out[57], "index", None), raised=raised, singles=singles)

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

beforeAll(async () => {
  p = await startTestPlatform();
  client = createPlatformClient(p);
  const { appId, buildId } = await uploadArtifact(p, await buildFixtureArtifact(), "platform-app");
  const env = await client.createEnvironment(appId, "production");
  for (const name of ["work", "api"]) {
    await client.saveEndpoint({ name, type: name === "api" ? "LB" : "QB", template: { imageName: "svc/worker-cpu:py3.11" }, instanceIds: ["cpu3c-2-4"], workersMin: name === "work" ? 2 : 0, workersMax: 2, environmentId: env.id, buildId });
  }
  await client.deployBuildToEnvironment(env.id, buildId);
}, 60_000);
afterAll(async () => {
  await p?.dispose();
});

describe("Python fan-out outside a worker", () => {
  it(".map in input order with a failing item named, .spawn get/cancel, .remote, and a worker killed mid-map loses nothing", async () => {
    const child = spawn(process.env.SVC_PYTHON ?? "python3", ["-c", SCRIPT], {
      cwd: FIXTURE,
      env: { ...process.env, PYTHONPATH: RUNTIME, PLATFORM_API_URL: p.url, PLATFORM_API_KEY: p.apiKey, SVC_ENV: "", SVC_BUILD_ID: "", SVC_ENDPOINT_NAME: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk));
    const lines: Array<Record<string, any>> = [];
    for await (const line of createInterface({ input: child.stdout! })) {
      const message = JSON.parse(line) as Record<string, any>;
      lines.push(message);
      if (message.kill) {
        // mid-map: kill one of the endpoint's two workers while it holds jobs
        const busy = await waitFor("a worker holding a job", () => [...p.context.supervisor.workers.values()].find((w) => w.pid && p.context.queue.jobsOf(w.id).size > 0), 20_000, 5);
        process.kill(busy.pid!, "SIGKILL");
      }
    }
    const code = await new Promise((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", resolve)));
    expect(code, stderr).toBe(0);
    const [mapped, handles, cancel, , survived] = lines;
    expect(mapped).toMatchObject({ ordered: true, failed_index: 57, raised: { index: 57 } });
    expect(mapped!.failed).toContain("item 57 ({'op': 'fail', 'message': 'item fifty-seven broke'})");
    expect(mapped!.failed).toContain("item fifty-seven broke");
    expect(mapped!.raised.message).toContain("item 57");
    expect(mapped!.singles).toEqual([null, { echo: null }]);
    expect(handles).toEqual({ remote: { echo: "r" }, got: { echo: "s" } });
    expect(cancel).toEqual({ cancelled: "CANCELLED", after: "CANCELLED", status: "CANCELLED" });
    expect(survived).toEqual({ survived: 200, all_ok: true });
  }, 120_000);
});
