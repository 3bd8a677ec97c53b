/**
 * Scheduled endpoints on a real embedded platform (docs/platform.md, "Schedules"):
 * fixtures/scheduled-app deployed with `svc deploy`'s code (its listing gives each schedule's next run),
 * its workers the real Python runtime. `ticker` runs every 2 s (a seconds field) with its
 * Cron(input=...); the platform is stopped for two of its slots and started again on the same state:
 * one run for the missed slots (the latest), none twice. `slow` (every second, 2.5 s per run) has
 * its overlapping slots skipped, and says so. `svc schedule list` and /health show last and next runs.
 */
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { formatDeploySummary } from "../../cli/commands/_deploy-output.ts";
import { createPlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import { startPlatform, type RunningPlatform } from "../../platform/index.ts";
import { runSvc } from "../_support/cli.ts";
import { api, FAST } from "./_support.ts";

const FIXTURE = new URL("../../fixtures/scheduled-app/", import.meta.url).pathname;
const RUN_LINE = /schedule of (\S+): the (\S+) run is job (\S+)/;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

describe("scheduled endpoints", () => {
  let dataDir: string;
  let root: string;
  let platform: RunningPlatform;
  const logs: string[] = [];
  const start = async () => (platform = await startPlatform({ ...FAST, dataDir, port: 0, log: (line) => logs.push(`${Date.now()} ${line}`) }));
  const svc = (args: string[]) =>
    runSvc([...args, "--root", root], {
      env: { ...process.env, PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey, NO_COLOR: "1" },
      timeout: 120_000,
    });
  const runs = (endpoint: string) =>
    logs
      .map((line) => RUN_LINE.exec(line))
      .filter((m) => m?.[1] === endpoint)
      .map((m) => ({ slot: Date.parse(m![2]!), job: m![3]! }));
  let ids: Record<string, string> = {};

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "svc-schedules-platform-"));
    root = await mkdtemp(join(tmpdir(), "svc-schedules-app-"));
    await cp(FIXTURE, root, { recursive: true });
    await start();
  });
  afterAll(async () => {
    await platform?.close();
    await rm(dataDir, { recursive: true, force: true });
    await rm(root, { recursive: true, force: true });
  });

  it("svc deploy lists each schedule with its next run", async () => {
    const { ctx, summary } = await runDeploy({ root, client: createPlatformClient(platform), logger: createLogger("silent") });
    ids = Object.fromEntries(ctx.deployed.map((e) => [e.name, e.id]));
    const text = formatDeploySummary(summary);
    expect(text).toContain("Schedules (svc schedule list)");
    expect(text).toMatch(/ticker {2}\*\/2 \* \* \* \* \* \(Europe\/Paris\), next \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(\d{4}-\d\d-\d\dT[\d:.]+Z\)/);
    expect(text).toMatch(/slow {2}\* \* \* \* \* \* \(UTC\), next /);
  }, 120_000);

  it("runs the function on schedule with the schedule's input; a restart after downtime runs the missed slots once, none twice", async () => {
    const completed = async () => (await api(platform, "GET", `/v2/${ids.ticker}/health`)).body.jobs.completed as number;
    await until("two completed ticker runs", async () => ((await completed()) >= 2 ? true : undefined), 40_000);
    const before = runs("ticker");
    for (const { slot } of before) expect(new Date(slot).getUTCSeconds() % 2).toBe(0); // */2 in the seconds field
    const job = (await api(platform, "GET", `/v2/${ids.ticker}/status/${before[0]!.job}`)).body;
    expect(job).toMatchObject({ status: "COMPLETED", output: { tag: "nightly" } });

    // stopped between runs (a run still queued at the restart would make the platform skip the missed slot: the next test)
    await until(
      "no ticker run queued or running",
      async () => {
        const { jobs } = (await api(platform, "GET", `/v2/${ids.ticker}/health`)).body;
        return jobs.inQueue + jobs.inProgress === 0 ? true : undefined;
      },
      10_000,
    );
    await platform.close();
    const stoppedAt = Date.now();
    await sleep(4500); // two or three */2 slots pass with no platform
    await start();
    const restartedAt = Date.now(); // its sweep ticks within 100 ms
    await until("a ticker run after the restart", () => (runs("ticker").length > before.length ? true : undefined), 10_000);
    await sleep(2500); // and the next regular slot

    const all = runs("ticker");
    const slots = all.map((r) => r.slot);
    expect(new Set(slots).size).toBe(slots.length); // never two runs of one slot
    const missed = all.filter((r) => r.slot > stoppedAt && r.slot <= restartedAt + 500); // two or more slots...
    expect(missed, JSON.stringify({ stoppedAt, restartedAt, runs: all })).toHaveLength(1); // ...one run: no catch-up storm
    expect(missed[0]!.slot).toBeGreaterThan(restartedAt - 2000); // the latest slot due
    const rows = platform.context.store.db.prepare("SELECT id FROM jobs WHERE endpoint_id = ?").all(ids.ticker) as Array<{ id: string }>;
    expect(rows.map((r) => r.id).sort()).toEqual(all.map((r) => r.job).sort()); // each job is one logged slot's

    const health = (await api(platform, "GET", `/v2/${ids.ticker}/health`)).body;
    expect(health.schedule).toMatchObject({ cron: "*/2 * * * * *", timezone: "Europe/Paris", input: { tag: "nightly" }, lastJobId: all.at(-1)!.job });
    expect(Date.parse(health.schedule.nextRunAt)).toBeGreaterThan(Date.parse(health.schedule.lastRunAt));
  }, 90_000);

  it("skips a slot while the previous run is still going, and says so", async () => {
    const skipped = logs.filter((line) => /schedule of slow: the \S+ run skipped, the previous run \S+ is still (IN_QUEUE|IN_PROGRESS)/.test(line));
    expect(skipped.length).toBeGreaterThan(0);
    const slow = runs("slow");
    const rows = platform.context.store.db.prepare("SELECT id FROM jobs WHERE endpoint_id = ?").all(ids.slow) as Array<{ id: string }>;
    expect(rows).toHaveLength(slow.length);
    expect((await api(platform, "GET", `/v2/${ids.slow}/health`)).body.schedule.skipped).toBeGreaterThan(0);

    const table = await svc(["schedule", "list"]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/ENDPOINT\s+CRON\s+TIME ZONE\s+LAST RUN\s+LAST JOB\s+NEXT RUN/);
    expect(table.stdout).toMatch(/ticker\s+\*\/2 \* \* \* \* \*\s+Europe\/Paris\s+\d{4}-\S+\s+[0-9a-f-]{36} (COMPLETED|IN_QUEUE|IN_PROGRESS)\s+\d{4}-/);
    expect(table.stdout).toMatch(/slow\s+\* \* \* \* \* \*\s+UTC\s/);
  }, 60_000);
});
