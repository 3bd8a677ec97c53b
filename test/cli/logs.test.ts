/**
 * `svc logs` as a user runs it: the real CLI (bin/svc.mjs) against a real embedded platform in this
 * process, reached through PLATFORM_API_URL (the hosted platform's path: same client code), with a
 * deployed endpoint whose real Python worker print()s: the lines, --since, --json, --follow, and
 * the logs of the endpoint after it was undeployed.
 */
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { buildSchema, graphql } from "graphql";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, runSvc } from "../_support/cli.ts";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { parseSince } from "../../cli/commands/logs.ts";
import { fetchWorkerLogLines, followWorkerLogs } from "../../core/client/worker-logs.ts";
import { isSvcError } from "../../core/errors.ts";
import { openDb } from "../../platform/store/db.ts";
import { createLogsRepo, DEFAULT_LOG_CHARS, LOG_RETENTION_MS } from "../../platform/store/logs.ts";
import { startTestPlatform, type TestPlatform } from "../dev/_dev-platform.ts";

const FIXTURE = new URL("../../fixtures/deploy-app/", import.meta.url).pathname;

const TALKER = `import json

from svc import Endpoint


def parse(text):
    return json.loads(text)


@Endpoint(name="talker", cpu="cpu3c-2-4", workers=(0, 1), idle_timeout=30)
def talk(text: str) -> dict:
    if text.startswith("{"):
        return parse(text)
    print(f"talker says {text}")
    return {"said": text}
`;

const BROKEN = `import not_installed_pkg
from svc import Endpoint


@Endpoint(name="broken", cpu="cpu3c-2-4", workers=(0, 1))
def broken() -> int:
    return 1
`;

describe("svc logs", { timeout: 120_000 }, () => {
  let platform: TestPlatform;
  let client: PlatformClient;
  let root: string;
  let env: NodeJS.ProcessEnv;

  const svc = (args: string[]) => runSvc([...args, "--root", root], { env, timeout: 90_000 });
  const talker = async () => (await client.getApp("deploy-app"))!.environments[0]!.endpoints.find((e) => e.name === "talker")!;
  const say = async (text: string) => expect((await client.runsync((await talker()).id, { text })).output).toEqual({ said: text });

  beforeAll(async () => {
    platform = await startTestPlatform();
    client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
    root = await mkdtemp(join(tmpdir(), "svc-logs-app-"));
    await cp(FIXTURE, root, { recursive: true });
    await writeFile(join(root, "talk.py"), TALKER);
    await writeFile(join(root, "broken.py"), BROKEN);
    env = { ...process.env, NO_COLOR: "1", PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey };
    const deployed = await svc(["deploy", "--json"]);
    expect(deployed.code, deployed.stderr).toBe(0);
  });
  afterAll(async () => {
    await platform?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("shows a worker's print() lines with their time and worker; --since leaves out older ones; --json", async () => {
    await say("first");
    const shown = await svc(["logs", "talker"]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^\d{4}-\d\d-\d\dT\S+Z \S+ talker says first$/m);

    const between = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    await say("second");
    const since = await svc(["logs", "talker", "--since", between, "--json"]);
    expect(since.code, since.stderr).toBe(0);
    const body = JSON.parse(since.stdout) as { endpoint: { name: string }; lines: Array<{ line: string; at: string; cursor: string }> };
    expect(body.endpoint.name).toBe("talker");
    expect(body.lines.map((l) => l.line)).toContain("talker says second");
    expect(body.lines.map((l) => l.line)).not.toContain("talker says first");
    expect(body.lines.every((l) => l.at >= between)).toBe(true);

    const bad = await svc(["logs", "talker", "--since", "yesterday-ish"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("[CLI_USAGE] --since takes a duration");
    const missing = await svc(["logs", "nobody"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('[NOT_FOUND] Endpoint "nobody" was not found.');
  });

  it("has one line per completed job, written by the platform, with the time it took", async () => {
    const job = await client.runsync((await talker()).id, { text: "timed" });
    const ofJob = async () => {
      const shown = await svc(["logs", "talker", "--json"]);
      return (JSON.parse(shown.stdout) as { lines: Array<{ line: string }> }).lines.map((l) => l.line).filter((l) => l.includes(job.id));
    };
    const deadline = Date.now() + 10_000;
    let lines = await ofJob();
    while (lines.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      lines = await ofJob();
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^\\[platform\\] job ${job.id}: completed in \\d+\\.\\d\\d s$`));
  });

  it("shows a failed job's traceback under its line: the last frames, the app's own marked; /status's error has it too", async () => {
    const job = await client.runsync((await talker()).id, { text: "{oops" });
    expect(job.status).toBe("FAILED");
    const error = JSON.parse(String(job.error)) as { error_type: string; error_traceback: string };
    expect(error.error_type).toBe("JSONDecodeError");
    expect(error.error_traceback).toMatch(/^> talk\.py:\d+ in talk\n {6}return parse\(text\)$/m);
    expect(error.error_traceback).toMatch(/^> talk\.py:\d+ in parse$/m);
    expect(error.error_traceback).toMatch(/^ {2}\/\S+\/json\/decoder\.py:\d+ in raw_decode$/m);
    expect(error.error_traceback).not.toContain("svc/_jobs.py"); // the runtime's own frames are left out
    const deadline = Date.now() + 20_000;
    let shown = await svc(["logs", "talker"]);
    while (!shown.stdout.includes("json.decoder.JSONDecodeError") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 300));
      shown = await svc(["logs", "talker"]);
    }
    const from = shown.stdout.indexOf(`job ${job.id}: failed after`);
    expect(from, shown.stdout).toBeGreaterThan(0);
    const after = shown.stdout.slice(from);
    expect(after).toMatch(/ > talk\.py:\d+ in parse\n/);
    expect(after).toContain("json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes");
  });

  it("shows why a worker cannot start: the import error's traceback", async () => {
    const broken = (await client.getApp("deploy-app"))!.environments[0]!.endpoints.find((e) => e.name === "broken")!;
    await client.runsync(broken.id, {}, { timeoutMs: 20_000 }); // starts a worker, which fails to import the module
    const deadline = Date.now() + 30_000;
    let shown = await svc(["logs", "broken"]);
    while (!shown.stdout.includes("ModuleNotFoundError") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      shown = await svc(["logs", "broken"]);
    }
    expect(shown.stdout).toContain("import not_installed_pkg");
    expect(shown.stdout).toContain("ModuleNotFoundError: No module named 'not_installed_pkg'");
  });

  it("--follow prints new lines as the worker prints them, until SIGINT", async () => {
    const from = new Date().toISOString();
    const child = spawn(process.execPath, [BIN, "logs", "talker", "--follow", "--since", from, "--root", root], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    const waitFor = async (text: string) => {
      const deadline = Date.now() + 30_000;
      while (!out.includes(text) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(out).toContain(text);
    };
    try {
      await say("third"); // shown first or by a poll, depending on how soon the CLI is up
      await waitFor("talker says third");
      await say("fourth"); // printed after the follower started: only a poll can show it
      await waitFor("talker says fourth");
      expect(out.match(/talker says third/g)).toHaveLength(1);
      expect(out).not.toContain("talker says first");
      child.kill("SIGINT");
      expect(await exited).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("a follower keeps one request open at the platform, answered when a line comes: no polling while idle", async () => {
    let requests = 0;
    const counting = {
      url: client.url,
      graphql: ((...args: Parameters<PlatformClient["graphql"]>) => (requests++, client.graphql(...args))) as PlatformClient["graphql"],
    };
    const seen: string[] = [];
    const endpointId = (await talker()).id;
    const follower = followWorkerLogs(counting, {
      targets: () => [{ endpointId, label: "talker" }],
      onLine: (_target, line) => seen.push(line.line),
      waitMs: 20_000,
    });
    try {
      await new Promise((r) => setTimeout(r, 1500)); // 500 ms polling would have asked 3 times
      expect(requests).toBe(1);
      await say("long poll");
      const deadline = Date.now() + 10_000;
      while (!seen.includes("talker says long poll") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(seen).toContain("talker says long poll");
      expect(requests).toBeLessThanOrEqual(4); // the answer(s) with the job's lines, and the next one open
      // stop() ends the open request and takes one last plain poll: it does not wait out the 20 s
      const stopping = Date.now();
      await follower.stop();
      expect(Date.now() - stopping).toBeLessThan(10_000);
    } finally {
      await follower.stop();
    }
  });

  it("-f -n 0 follows from now on: none of the lines printed before it started", async () => {
    await say("before follow");
    const child = spawn(process.execPath, [BIN, "logs", "talker", "-f", "-n", "0", "--root", root], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    try {
      // the follower prints nothing until a new line comes: keep printing until one shows (bounded)
      const deadline = Date.now() + 30_000;
      for (let n = 1; !out.includes("talker says after follow") && Date.now() < deadline; n++) {
        await say(`after follow ${n}`);
        await new Promise((r) => setTimeout(r, 300));
      }
      expect(out).toContain("talker says after follow");
      expect(out).not.toContain("talker says before follow");
      expect(out).not.toContain("talker says first");
      child.kill("SIGINT");
      expect(await exited).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("keeps the logs of an undeployed endpoint readable, and says it was deleted", async () => {
    const id = (await talker()).id;
    const undeployed = await svc(["undeploy", "--yes"]);
    expect(undeployed.code, undeployed.stderr).toBe(0);
    expect((await client.listEndpoints()).some((e) => e.id === id)).toBe(false);
    const shown = await svc(["logs", "talker"]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain("talker says first");
    expect(shown.stderr).toMatch(new RegExp(`talker \\(${id}\\) was deleted at \\S+; its logs are kept for 24 hours`));
    // and by id
    expect((await svc(["logs", id, "--json"])).stdout).toContain("talker says third");
  });

  it("--since takes durations and ISO times", () => {
    const now = Date.parse("2026-11-23T12:00:00Z");
    expect(parseSince("10m", now)).toBe("2026-11-23T11:50:00.000Z");
    expect(parseSince("2h", now)).toBe("2026-11-23T10:00:00.000Z");
    expect(parseSince("2026-11-23T11:00:00+01:00", now)).toBe("2026-11-23T10:00:00.000Z");
  });

  it("the store drops a deleted endpoint's lines once the retention has passed, not before", () => {
    const db = openDb(":memory:");
    const logs = createLogsRepo(db, { lines: 100, chars: DEFAULT_LOG_CHARS });
    logs.append("ep_1", "wk_1", "kept a while");
    const deletedAt = Date.now();
    logs.retire({ id: "ep_1", name: "talker", environmentId: "env_1" }, deletedAt);
    logs.prune(deletedAt + LOG_RETENTION_MS - 1);
    expect(logs.lines("ep_1", { limit: 10 }).map((l) => l.line)).toEqual(["kept a while"]);
    expect(logs.retiredEndpoints("talker")).toEqual([{ id: "ep_1", name: "talker", environmentId: "env_1", deletedAt }]);
    logs.prune(deletedAt + LOG_RETENTION_MS + 1);
    expect(logs.lines("ep_1", { limit: 10 })).toEqual([]);
    expect(logs.retiredEndpoints()).toEqual([]);
    db.close();
  });

  it("the store keeps each endpoint near its cap of lines, dropping the oldest, without touching other endpoints", () => {
    const db = openDb(":memory:");
    const logs = createLogsRepo(db, { lines: 100, chars: DEFAULT_LOG_CHARS });
    logs.append("ep_2", "wk_2", "another endpoint's line");
    for (let batch = 0; batch < 10; batch++) {
      for (let i = 0; i < 50; i++) logs.append("ep_1", "wk_1", `line ${batch * 50 + i}`);
      logs.flush();
      const count = (db.prepare("SELECT COUNT(*) AS n FROM worker_logs WHERE endpoint_id = 'ep_1'").get() as { n: number }).n;
      expect(count).toBeLessThanOrEqual(100 + 100); // the cap and at most the slack over it
    }
    const newest = logs.lines("ep_1", { limit: 100 }).map((l) => l.line);
    expect(newest.at(-1)).toBe("line 499");
    expect(newest).toHaveLength(100);
    expect(logs.lines("ep_1", { limit: 1000 }).map((l) => l.line)).not.toContain("line 0");
    expect(logs.lines("ep_2", { limit: 10 }).map((l) => l.line)).toEqual(["another endpoint's line"]);
    db.close();
  });

  it("the store keeps each endpoint within its characters too: long lines make the oldest go sooner", () => {
    const db = openDb(":memory:");
    const logs = createLogsRepo(db, { lines: 5000, chars: 10_000 });
    const line = (i: number) => `${String(i).padStart(4, "0")} ${"x".repeat(995)}`; // 1,000 characters
    for (let i = 0; i < 100; i++) {
      logs.append("ep_1", "wk_1", line(i));
      if (i % 7 === 0) logs.flush();
    }
    logs.flush();
    const { n, chars } = db.prepare("SELECT COUNT(*) AS n, SUM(length(line)) AS chars FROM worker_logs WHERE endpoint_id = 'ep_1'").get() as {
      n: number;
      chars: number;
    };
    expect(chars).toBeLessThanOrEqual(10_000 * 1.25 + 7 * 1000); // the cap, its slack, one batch
    expect(n).toBeGreaterThanOrEqual(10);
    expect(logs.lines("ep_1", { limit: 1 })[0]!.line).toBe(line(99));
    db.close();
  });

  it("a follower asked to long-poll a platform whose workerLogLines has no `wait` polls it instead", async () => {
    // A stand-in for a hosted platform with the field but not its `wait`: graphql-js over that schema.
    const schema = buildSchema(
      "type L { cursor: String!, at: String!, workerId: String!, line: String! } type Query { workerLogLines(endpointId: String!, after: String, since: String, limit: Int): [L!]! }",
    );
    const asked: boolean[] = []; // per request: did it pass `wait`
    const rootValue = {
      workerLogLines: ({ after }: { after?: string }) => (after ? [] : [{ cursor: "1", at: new Date().toISOString(), workerId: "wk", line: "hi" }]),
    };
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", async () => {
        const { query, variables } = JSON.parse(body);
        asked.push(/wait:/.test(query));
        const result = await graphql({ schema, source: query, variableValues: variables, rootValue });
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(result));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const other = createPlatformClient({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: "k" });
      const lines: string[] = [];
      const errors: unknown[] = [];
      const follower = followWorkerLogs(other, {
        targets: () => [{ endpointId: "ep_1", label: "x" }],
        onLine: (_target, line) => lines.push(line.line),
        onError: (e) => errors.push(e),
        waitMs: 20_000,
        intervalMs: 20,
      });
      await new Promise((r) => setTimeout(r, 400));
      await follower.stop();
      expect(errors).toEqual([]);
      expect(lines).toEqual(["hi"]);
      expect(asked[0]).toBe(true); // refused once with `wait`, then polled without it
      expect(asked.length).toBeGreaterThanOrEqual(3);
      expect(asked.slice(1).every((wait) => !wait)).toBe(true);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it("a platform whose GraphQL API has no workerLogLines is LOGS_UNAVAILABLE, and a follower stops asking", async () => {
    // A stand-in for a hosted platform without the field: graphql-js over a schema that lacks it.
    const schema = buildSchema("type Query { myself: String }");
    let requests = 0;
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", async () => {
        requests++;
        const { query, variables } = JSON.parse(body);
        const result = await graphql({ schema, source: query, variableValues: variables });
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(result));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const other = createPlatformClient({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: "k" });
      const error = await fetchWorkerLogLines(other, [{ endpointId: "ep_1" }]).catch((e: unknown) => e);
      expect(isSvcError(error) && error.code).toBe("LOGS_UNAVAILABLE");
      const errors: unknown[] = [];
      const follower = followWorkerLogs(other, {
        targets: () => [{ endpointId: "ep_1", label: "x" }],
        onLine: () => {},
        onError: (e) => errors.push(e),
        intervalMs: 20,
      });
      await new Promise((r) => setTimeout(r, 300));
      await follower.stop();
      expect(errors).toHaveLength(1);
      expect(requests).toBe(2);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
