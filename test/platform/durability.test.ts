/**
 * Durability: `svc platform start` as a child process is killed with SIGKILL while jobs wait and
 * run; after a restart on the same folder every accepted job completes. Also `platform status/stop`.
 */
import { afterAll, describe, expect, it } from "vitest";
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { readFileSync, existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { api, buildFixtureArtifact, deploy, tempDir, waitFinal, waitFor } from "./_support.ts";
import { platformAnswers, ensureLocalPlatform } from "../../platform/ensure.ts";
import { readState, isAlive } from "../../platform/state-dir.ts";
import { freePort } from "../../platform/_free-port.ts";

const BIN = new URL("../../bin/svc.mjs", import.meta.url).pathname;
const run = promisify(execFile);
const children: ChildProcess[] = [];
let dir: string;

async function startChild(port: number, ...flags: string[]): Promise<{ child: ChildProcess; url: string; apiKey: string }> {
  const child = spawn(process.execPath, [BIN, "platform", "start", "--dir", dir, "--port", String(port), ...flags], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, SVC_PLATFORM_DIR: dir },
  });
  children.push(child);
  let output = "";
  child.stdout!.on("data", (c) => (output += c));
  child.stderr!.on("data", (c) => (output += c));
  const url = `http://127.0.0.1:${port}`;
  const apiKey = await waitFor(
    `the platform to answer (${output})`,
    async () => {
      if (!existsSync(join(dir, "api-key"))) return undefined;
      const key = readFileSync(join(dir, "api-key"), "utf8").trim();
      return (await platformAnswers(url, key)) ? key : undefined;
    },
    20_000,
    100,
  );
  return { child, url, apiKey };
}

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("durability", () => {
  it("jobs accepted by /run survive kill -9 of the platform and complete after a restart", async () => {
    dir = await tempDir("svc-platform-durable-");
    const port = await freePort();
    const first = await startChild(port);
    const p = { url: first.url, apiKey: first.apiKey };
    const { endpoints } = await deploy(p, await buildFixtureArtifact(), [{ name: "work", workersMax: 2, scalerValue: 0 }]);
    const id = endpoints.work!.id;

    const slow = (await api(p, "POST", `/v2/${id}/run`, { input: { op: "sleep", seconds: 3 } })).body.id as string;
    const quick: string[] = [];
    for (let i = 0; i < 20; i++) quick.push((await api(p, "POST", `/v2/${id}/run`, { input: { op: "sleep", seconds: 0.5 } })).body.id);
    await waitFor("the slow job to run", async () => (await api(p, "GET", `/v2/${id}/status/${slow}`)).body.status === "IN_PROGRESS", 15_000);
    // /status answers from memory; a job's start is committed a turn later. Health counts from the
    // database (its read commits what is pending first): once it counts a running job, the crash below
    // finds one to requeue as a retry (a kill between the two left it IN_QUEUE once, on a loaded CI run).
    await waitFor("a running job in the database", async () => (await api(p, "GET", `/v2/${id}/health`)).body.jobs.inProgress >= 1, 15_000);

    first.child.kill("SIGKILL");
    await new Promise((r) => first.child.once("exit", r));

    const second = await startChild(port);
    const q = { url: second.url, apiKey: second.apiKey };
    expect(second.apiKey).toBe(first.apiKey);
    for (const job of [slow, ...quick]) expect((await waitFinal(q, id, job, 40_000)).status).toBe("COMPLETED");
    const health = (await api(q, "GET", `/v2/${id}/health`)).body;
    expect(health.jobs.retried).toBeGreaterThanOrEqual(1); // the job running at the crash was requeued as a retry

    const status = await run(process.execPath, [BIN, "platform", "status", "--dir", dir, "--json"]);
    expect(JSON.parse(status.stdout)).toMatchObject({ running: true, url: second.url, pid: second.child.pid });
    const stop = await run(process.execPath, [BIN, "platform", "stop", "--dir", dir, "--json"]);
    expect(JSON.parse(stop.stdout)).toMatchObject({ stopped: true });
    expect(second.child.exitCode ?? (await new Promise((r) => second.child.once("exit", r)))).toBe(0);
    expect(existsSync(join(dir, "platform.json"))).toBe(false);
  }, 80_000);

  it("a result acknowledged before kill -9 (runsync answer, job-done) is committed: it does not run again", async () => {
    dir = await tempDir("svc-platform-durable-");
    const port = await freePort();
    const first = await startChild(port);
    const p = { url: first.url, apiKey: first.apiKey };
    const { endpoints } = await deploy(p, await buildFixtureArtifact(), [{ name: "work", workersMin: 2, workersMax: 2 }]);
    const id = endpoints.work!.id;
    await waitFor("2 warm workers", async () => (await api(p, "GET", `/v2/${id}/health`)).body.workers.idle === 2, 30_000);

    // 16 clients send runsync jobs until the platform dies under them; each COMPLETED answer is an acknowledgement.
    const acknowledged = new Map<string, number>();
    let killed = false;
    let n = 0;
    const client = async () => {
      while (!killed) {
        const value = n++;
        try {
          const r = await api(p, "POST", `/v2/${id}/runsync`, { input: { op: "echo", value } });
          if (r.body?.status === "COMPLETED") acknowledged.set(r.body.id, value);
        } catch {
          return; // the platform is gone
        }
      }
    };
    const clients = Array.from({ length: 16 }, client);
    await waitFor("some acknowledged jobs", () => acknowledged.size >= 300, 30_000, 20);
    first.child.kill("SIGKILL");
    killed = true;
    await new Promise((r) => first.child.once("exit", r));
    await Promise.all(clients);

    const second = await startChild(port, "--no-rate-limits");
    const q = { url: second.url, apiKey: second.apiKey };
    for (const [job, value] of acknowledged) {
      const status = (await api(q, "GET", `/v2/${id}/status/${job}`)).body;
      expect({ job, status: status.status, output: status.output }).toEqual({ job, status: "COMPLETED", output: { echo: value } });
    }
    // --no-rate-limits: the hosted purge-queue limit (2 per 10 s) no longer applies
    const purges = await Promise.all(Array.from({ length: 4 }, () => api(q, "POST", `/v2/${id}/purge-queue`)));
    expect(purges.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    second.child.kill("SIGTERM");
    await new Promise((r) => second.child.once("exit", r));
  }, 90_000);

  it("ensureLocalPlatform starts a detached platform once and finds it afterwards", async () => {
    const own = await tempDir("svc-platform-ensure-");
    try {
      const first = await ensureLocalPlatform({ dir: own, port: await freePort() });
      expect(await platformAnswers(first.url, first.apiKey)).toBe(true);
      const again = await ensureLocalPlatform({ dir: own });
      expect(again).toEqual(first);
      const state = readState(own)!;
      expect(state.url).toBe(first.url);
      process.kill(state.pid, "SIGTERM");
      await waitFor("the detached platform to stop", () => !isAlive(state.pid), 15_000);
    } finally {
      await rm(own, { recursive: true, force: true });
    }
  }, 40_000);
});
