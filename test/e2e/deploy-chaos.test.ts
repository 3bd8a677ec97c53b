/**
 * Chaos: `svc deploy` killed with SIGKILL at each of its steps, each time followed by a redeploy,
 * on a REAL embedded platform (this process, temp data dir, loopback) with real Python workers and
 * the real CLI (bin/svc.mjs) as a child process. Meanwhile every endpoint (four queue-based, one
 * load-balanced) is called without pause.
 *
 * What must hold (issue 19; docs/deploy.md, "One switch"):
 * - one build served at every moment: in the platform's own job records, ordered by the moment a
 *   worker took each job, every build forms one contiguous run (a build never serves again once a
 *   later one has, and no endpoint serves an old build while another serves the new one); the
 *   load-balanced endpoint's answers, which leave no job record, in the order they came;
 * - while a killed deploy is left unfinished, every endpoint answers one build: the old one when the
 *   CLI died before the switch, the new one when it died after;
 * - the next deploy finishes cleanly: the environment has exactly the manifest's endpoints, once
 *   each, nothing staged is left, and every live worker runs the active build.
 *
 * Each killed deploy adds an endpoint (`extra`) that the redeploy drops again, so a kill leaves
 * created-but-not-switched endpoints behind, or (after the switch) a live one to retire.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { startPlatform, type RunningPlatform } from "../../platform/index.ts";

const BIN = new URL("../../bin/svc.mjs", import.meta.url).pathname;
const APP = "chaos-app";
const QUEUE = ["e1", "e2", "e3", "e4"];
const LB = "web";
const BASE = [...QUEUE, LB];
const EXTRA = "extra";

/**
 * Where the CLI is killed: at the `nth` line matching `line` (the CLI prints each as that step
 * starts), or, with `committed`, the moment the platform has committed the switch, before its answer
 * reaches the CLI (after the switch the CLI only prints and exits: a kill at its last line would race
 * its exit).
 */
interface KillPoint {
  step: string;
  line?: RegExp;
  nth?: number;
  committed?: true;
  /** The switch cannot have happened (the CLI died before it asked for it). */
  beforeSwitch: boolean;
}
const KILL_POINTS: KillPoint[] = [
  { step: "upload", line: /uploading .* artifact/, nth: 1, beforeSwitch: true },
  ...[...BASE, EXTRA].map((_, i) => ({
    step: `provision ${i + 1} of ${BASE.length + 1}`,
    line: /(created|updated) endpoint /,
    nth: i + 1,
    beforeSwitch: true,
  })),
  { step: "configure, at the switch", line: /switching .* to build/, nth: 1, beforeSwitch: false },
  { step: "configure, after the switch", committed: true, beforeSwitch: false },
];

interface Answer {
  endpoint: string;
  build: string;
}

async function writeApp(root: string, version: string, names: string[]): Promise<void> {
  const body = `    return {"build": os.environ["SVC_BUILD_ID"], "version": VERSION}\n`;
  const functions = names.map((name) =>
    name === LB
      ? `${name} = Endpoint(name="${name}", cpu="cpu3c-2-4", workers=(0, 1))\n\n\n@${name}.get("/build")\ndef ${name}_build() -> dict:\n${body}`
      : `@Endpoint(name="${name}", cpu="cpu3c-2-4", workers=(0, 1))\ndef ${name}() -> dict:\n${body}`,
  );
  await writeFile(join(root, "workers.py"), `import os\n\nfrom svc import Endpoint\n\nVERSION = "${version}"\n\n\n${functions.join("\n\n")}`);
}

describe("kill -9 of svc deploy at each step, then a redeploy (real platform, workers and CLI)", () => {
  let platform: RunningPlatform;
  let client: PlatformClient;
  let root: string;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "svc-chaos-platform-"));
    root = await mkdtemp(join(tmpdir(), "svc-chaos-app-"));
    await writeFile(join(root, "svc.config.ts"), `export default { app: "${APP}" };\n`);
    // Completed runsync jobs are kept for the whole run: the check reads them at the end.
    platform = await startPlatform({ dataDir, port: 0, log: () => {}, runsyncRetentionMs: 3600_000, rateLimits: false });
    client = createPlatformClient(platform);
    // the real switch, then the kill of a CLI waiting at a `committed` kill point
    const endpoints = platform.context.store.endpoints;
    const switchBuild = endpoints.switchBuild.bind(endpoints);
    endpoints.switchBuild = (...args) => {
      switchBuild(...args);
      onSwitchCommitted?.();
    };
  });
  afterAll(async () => {
    await platform?.close();
    await rm(dataDir, { recursive: true, force: true });
    await rm(root, { recursive: true, force: true });
  });

  let onSwitchCommitted: (() => void) | undefined;

  /** Runs `svc deploy`; with `kill`, sends SIGKILL at that point and answers once the process is gone. */
  const deploy = (kill?: KillPoint) =>
    new Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, "deploy", "--no-deps", "--root", root], {
        env: { ...process.env, PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey, NO_COLOR: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      let seen = 0;
      onSwitchCommitted = kill?.committed ? () => child.kill("SIGKILL") : undefined;
      const watch = (chunk: Buffer) => {
        const text = chunk.toString();
        output += text;
        if (!kill?.line || child.killed) return;
        for (const line of text.split("\n")) if (kill.line.test(line) && ++seen === kill.nth) child.kill("SIGKILL");
      };
      child.stdout.on("data", watch);
      child.stderr.on("data", watch);
      child.on("error", reject);
      child.on("exit", (code, signal) => {
        onSwitchCommitted = undefined;
        resolve({ code, signal, output });
      });
    });

  const environment = async () => (await client.getApp(APP))!.environments.find((env) => env.name === "production")!;
  const stagedRows = () => (platform.context.store.db.prepare("SELECT COUNT(*) AS n FROM staged_endpoints").get() as { n: number }).n;

  it("keeps one build serving through every kill, and each redeploy finishes cleanly", { timeout: 600_000 }, async () => {
    await writeApp(root, "v0", BASE);
    const first = await deploy();
    expect(first.code, first.output).toBe(0);
    const deployed = (await environment()).endpoints;
    const ids = Object.fromEntries(deployed.map((e) => [e.name, e.id]));
    const lbUrl = deployed.find((e) => e.name === LB)!.url;

    // Every endpoint called one request after another for the whole run.
    const answers: Answer[] = [];
    const problems: string[] = [];
    let polling = true;
    const pollers = BASE.map(async (name) => {
      while (polling) {
        try {
          if (name === LB) {
            const res = await client.lbRequest(lbUrl, "GET", "/build");
            if (res.status === 200) answers.push({ endpoint: name, build: (res.body as { build: string }).build });
            else problems.push(`${name}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
            continue;
          }
          const job = await client.runsync(ids[name]!, {});
          if (job.status === "COMPLETED") answers.push({ endpoint: name, build: (job.output as { build: string }).build });
          else problems.push(`${name}: ${job.status} ${JSON.stringify(job.error ?? null)}`);
        } catch (error) {
          problems.push(`${name}: ${(error as Error).message}`);
        }
      }
    });
    /** Resolves once each endpoint gave `n` answers after answer number `from`; those answers. */
    const nextAnswers = async (from: number, n: number): Promise<Answer[][]> => {
      for (;;) {
        const later = BASE.map((name) => answers.slice(from).filter((a) => a.endpoint === name));
        if (later.every((list) => list.length >= n) || problems.length > 0) return later;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const servingNow = async (build: string) => {
      for (;;) {
        const from = answers.length;
        const later = await nextAnswers(from, 2);
        // The second answer of each endpoint is of a job sent after `from`: it says what is served now.
        if (later.every((list) => list.slice(1).every((a) => a.build === build)) || problems.length > 0) return;
      }
    };

    const active = [(await environment()).activeBuildId!];
    await servingNow(active[0]!);
    const report: string[] = [];
    for (const [k, point] of KILL_POINTS.entries()) {
      await writeApp(root, `killed-${k}`, [...BASE, EXTRA]);
      const killed = await deploy(point);
      expect(killed.signal, `the CLI was to die at "${point.step}"; it exited ${killed.code}:\n${killed.output}`).toBe("SIGKILL");

      // Left unfinished, the environment serves one build: the old one unless the switch was asked for.
      const mark = answers.length;
      const later = await nextAnswers(mark, 3);
      const afterKill = new Set(later.flatMap((list) => list.slice(1).map((a) => a.build)));
      expect(afterKill.size, `builds served after the kill at "${point.step}": ${[...afterKill].join(", ")}`).toBe(1);
      const served = [...afterKill][0]!;
      const before = active.at(-1)!;
      if (point.beforeSwitch) expect(served).toBe(before);
      if (point.committed) expect(served, "the switch was committed before the kill").not.toBe(before);
      if (served !== before) active.push(served);
      expect((await environment()).activeBuildId).toBe(served);

      await writeApp(root, `redeploy-${k}`, BASE);
      const redeploy = await deploy();
      expect(redeploy.code, redeploy.output).toBe(0);
      const env = await environment();
      active.push(env.activeBuildId!);
      await servingNow(env.activeBuildId!);

      // Nothing orphaned, nothing twice.
      expect(env.endpoints.map((e) => e.name).sort()).toEqual(BASE);
      expect(env.endpoints.map((e) => e.id).sort()).toEqual(Object.values(ids).sort());
      expect(platform.context.store.endpoints.list()).toHaveLength(BASE.length);
      expect(stagedRows()).toBe(0);
      report.push(`${point.step}: ${served === before ? "the old build" : "the killed deploy's build"} served until the redeploy`);
    }
    polling = false;
    await Promise.all(pollers);
    expect(problems).toEqual([]);

    // One build at every moment, from the platform's records: the builds of all jobs, in the order
    // workers took them (ties in the same millisecond ordered by deploy), run contiguously.
    const store = platform.context.store;
    store.jobs.flush();
    const order = new Map(active.map((build, i) => [build, i]));
    const jobs = store.db
      .prepare("SELECT endpoint_id, started_at, status, output FROM jobs")
      .all()
      .map((row) => {
        const r = row as { endpoint_id: string; started_at: number; status: string; output: string };
        return { endpoint: r.endpoint_id, startedAt: r.started_at, status: r.status, build: (JSON.parse(r.output) as { build: string }).build };
      })
      .sort((a, b) => a.startedAt - b.startedAt || order.get(a.build)! - order.get(b.build)!);
    expect(jobs.length).toBeGreaterThan(0);
    expect(jobs.filter((job) => job.status !== "COMPLETED")).toEqual([]);
    /** The builds of `served`, in order, each in one contiguous run. */
    const expectContiguous = (served: Array<{ build: string }>, what: string) => {
      const finished = new Set<string>();
      let current = served[0]!.build;
      for (const [i, { build }] of served.entries()) {
        if (build === current) continue;
        finished.add(current);
        expect(finished.has(build), `${what}: build ${build} served again (#${i}) after ${current}`).toBe(false);
        current = build;
      }
    };
    expectContiguous(jobs, "queue jobs by start");
    expectContiguous(
      answers.filter((a) => a.endpoint === LB),
      `${LB}'s answers in order`,
    );
    expect([...new Set(jobs.map((job) => job.build))]).toEqual([...new Set(active)].filter((build) => jobs.some((job) => job.build === build)));

    // Every live worker runs the active build; the old ones stop once idle.
    const last = (await environment()).activeBuildId;
    const liveBuilds = () =>
      store.db
        .prepare("SELECT DISTINCT build_id AS b FROM workers WHERE stopped_at IS NULL")
        .all()
        .map((row) => (row as { b: string }).b);
    while (liveBuilds().some((build) => build !== last)) await new Promise((resolve) => setTimeout(resolve, 100));

    const perEndpoint = BASE.map((name) => `${name} ${new Set(answers.filter((a) => a.endpoint === name).map((a) => a.build)).size}`);
    const lbAnswers = answers.filter((a) => a.endpoint === LB).length;
    console.log(
      `deploy chaos: ${KILL_POINTS.length} kill points, ${jobs.length} queue jobs + ${lbAnswers} LB requests, ${new Set(active).size} builds served; builds seen per endpoint: ${perEndpoint.join(", ")}\n  ${report.join("\n  ")}`,
    );
  });
});
