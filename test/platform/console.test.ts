/**
 * The console (/console) as its user sees it: a real embedded platform with a real Python worker,
 * the page in headless Chromium (Debian's `chromium`, driven by playwright-core): sign in with the
 * key (a worker's key refused), a job appears live after a runsync, a failed job's traceback opens,
 * the logs follow and search, a chart has points. Its JSON routes' keys and answers, and the time
 * series' arithmetic, without a browser.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { quantile, TimeSeries } from "../../platform/console/timeseries.ts";
import { api, buildFixtureArtifact, deploy, startTestPlatform, waitFor, type TestPlatform } from "./_support.ts";

const CHROMIUM = "/usr/bin/chromium";

let p: TestPlatform;
let work: { id: string; url: string };
let workerKey: string;

const consoleGet = (path: string, key?: string) =>
  fetch(`${p.url}/console/api/${path}`, { headers: key ? { authorization: `Bearer ${key}` } : {} }).then(async (r) => ({
    status: r.status,
    body: (await r.json()) as any,
  }));

beforeAll(async () => {
  p = await startTestPlatform({ consoleSampleMs: 300, runsyncRetentionMs: 120_000 });
  const deployed = await deploy(p, await buildFixtureArtifact(), [{ name: "work", workersMax: 1 }]);
  work = deployed.endpoints.work!;
  workerKey = p.context.workerKeys.keyFor(p.context.store.endpoints.get(work.id)!);
}, 120_000);

afterAll(async () => {
  await p?.dispose();
});

describe("the console's routes", () => {
  it("serves its page and assets to anyone, its data only with the platform's key: none is 401, a worker's key 403", async () => {
    const page = await fetch(`${p.url}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(await page.text()).toContain('<script src="/console/assets/console.js"></script>');
    const script = await fetch(`${p.url}/console/assets/console.js`);
    expect(script.headers.get("content-type")).toContain("text/javascript");
    expect((await script.text()).length).toBeGreaterThan(10_000); // uPlot is bundled in: nothing comes from a CDN
    expect((await fetch(`${p.url}/console/assets/console.css`)).status).toBe(200);

    expect((await consoleGet("overview")).status).toBe(401);
    const refused = await consoleGet("overview", workerKey);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe("KEY_SCOPE");
    const overview = await consoleGet("overview", p.apiKey);
    expect(overview.status).toBe(200);
    expect(overview.body.other.map((e: { id: string }) => e.id)).toContain(work.id);
  });

  it("answers bad parameters 400 and an unknown endpoint 404, never 5xx", async () => {
    expect((await consoleGet(`endpoints/${work.id}/jobs?status=DONE`, p.apiKey)).body.code).toBe("BAD_REQUEST");
    expect((await consoleGet(`endpoints/${work.id}/logs?limit=-1`, p.apiKey)).status).toBe(400);
    expect((await consoleGet("endpoints/ep_nope", p.apiKey)).status).toBe(404);
  });
});

describe("the time series", () => {
  it("takes quantiles by nearest rank", () => {
    expect(quantile([], 0.5)).toBeNull();
    expect(quantile([10, 20, 30, 40], 0.5)).toBe(20);
    expect(
      quantile(
        [...Array(100).keys()].map((i) => i + 1),
        0.99,
      ),
    ).toBe(99);
  });

  it("makes one point per endpoint per sample: throughput, p50/p99 of the jobs that ended, and keeps an hour", () => {
    const series = new TimeSeries(600_000); // 6 points an hour
    const ctx = {
      supervisor: { workers: new Map([["wk_1", { id: "wk_1", endpointId: "ep_1", coldStartMs: 800 }]]) },
      store: { endpoints: { list: () => [{ id: "ep_1" }] } },
      queue: { stats: () => ({ queued: 3, running: 1 }) },
    } as never;
    const job = (ms: number, status = "COMPLETED") => ({ endpointId: "ep_1", startedAt: 1000, finishedAt: 1000 + ms, status }) as never;
    for (const ms of [10, 20, 30, 1000]) series.jobFinished(job(ms));
    series.jobFinished(job(5, "FAILED"));
    const start = Date.now();
    series.sample(ctx, start + 10_000);
    const [point] = series.points("ep_1");
    expect(point).toMatchObject({ queued: 3, running: 1, p50: 20, p99: 1000, failed: 1, coldStarts: 1, coldStartMs: 800 });
    expect(point!.throughput).toBeCloseTo(0.5, 1);
    for (let i = 2; i <= 8; i++) series.sample(ctx, start + i * 10_000);
    expect(series.points("ep_1")).toHaveLength(6);
    expect(series.points("ep_1")[5]).toMatchObject({ throughput: 0, p50: null, coldStarts: 0 }); // a cold start counts once
  });
});

describe.runIf(existsSync(CHROMIUM))("the console in headless Chromium", () => {
  let browser: Browser;
  let page: Page;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it("refuses a worker's key, signs in with the platform's on Enter and keeps it in sessionStorage, not in the URL", { timeout: 60_000 }, async () => {
    await page.goto(`${p.url}/console`);
    await page.getByLabel("API key").fill(workerKey);
    await page.getByLabel("API key").press("Enter");
    await expect.poll(() => page.textContent("#signin-error")).toMatch(/^Refused: .*KEY_SCOPE|^Refused: /);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

    await page.getByLabel("API key").fill(p.apiKey);
    await page.getByLabel("API key").press("Enter");
    await page.getByRole("link", { name: "work" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("svc.console.key"))).toBe(p.apiKey);
    expect(page.url()).not.toContain(p.apiKey);
  });

  it("shows a job live after a runsync, a failed job's traceback, the logs following and searched, and charts with points", { timeout: 120_000 }, async () => {
    await page.getByRole("link", { name: "work" }).click();
    await page.locator("h1", { hasText: "work" }).waitFor();

    const ok = await api(p, "POST", `/v2/${work.id}/runsync`, { input: { op: "echo", value: "hi" } });
    expect(ok.body.status).toBe("COMPLETED");
    await expect.poll(() => page.locator("#jobs tr", { hasText: ok.body.id }).textContent({ timeout: 10_000 }), { timeout: 10_000 }).toContain("COMPLETED");
    // the worker that ran it, with its state and where it runs
    await expect.poll(() => page.textContent("#workers"), { timeout: 10_000 }).toMatch(new RegExp(`${ok.body.workerId}(idle|running)this machine`));
    const detail = await consoleGet(`endpoints/${work.id}`, p.apiKey);
    const worker = detail.body.workerList.find((w: { id: string }) => w.id === ok.body.workerId);
    expect(worker).toMatchObject({ node: "this machine", gpus: [], limits: { flavour: "cpu3c-2-4" } });
    expect(worker.memoryBytes === null || typeof worker.memoryBytes === "number").toBe(true); // a number where a cgroup counts it

    const failed = await api(p, "POST", `/v2/${work.id}/runsync`, { input: { op: "fail", message: "kaboom" } });
    expect(failed.body.status).toBe("FAILED");
    await page.getByLabel("Status").selectOption("FAILED");
    const row = page.locator("#jobs tr", { hasText: failed.body.id });
    await row.waitFor({ timeout: 10_000 });
    expect(await page.locator("#jobs tbody tr").count()).toBe(1); // the filter left the completed job out
    expect(await row.locator("summary").textContent()).toBe("ValueError: kaboom");
    await row.locator("summary").focus(); // keyboard: Enter opens it
    await page.keyboard.press("Enter");
    const traceback = row.locator("pre.traceback");
    await traceback.waitFor();
    expect(await traceback.textContent()).toMatch(/^> app\/jobs\.py:\d+ in work\n {6}raise ValueError\(message\)$/m);
    expect(await traceback.textContent()).toMatch(/ValueError: kaboom\n?$/);

    // The logs follow: the failed job's line and its traceback, then a new job's line without a reload.
    await expect.poll(() => page.textContent("#logs"), { timeout: 15_000 }).toContain(`job ${failed.body.id}: failed after`);
    const later = await api(p, "POST", `/v2/${work.id}/runsync`, { input: { op: "echo", value: "later" } });
    await expect.poll(() => page.textContent("#logs"), { timeout: 15_000 }).toContain(`job ${later.body.id}: completed`);
    await page.getByLabel("Search").fill("kaboom");
    await page.getByLabel("Search").press("Enter");
    // the job's line and its traceback's last line: only the lines with the text
    await expect
      .poll(async () => (await page.textContent("#logs"))?.split("\n") ?? [])
      .toEqual([expect.stringContaining(`job ${failed.body.id}: failed after`), expect.stringMatching(/ ValueError: kaboom$/)]);

    // The charts: points from the platform's own series, the throughput of those jobs among them.
    await expect.poll(async () => Number(await page.getAttribute("figure[aria-label^='Throughput']", "data-points")), { timeout: 15_000 }).toBeGreaterThan(1);
    const series = await consoleGet(`endpoints/${work.id}/series`, p.apiKey);
    expect(series.body.points.some((point: { throughput: number }) => point.throughput > 0)).toBe(true);
    expect(await page.locator("figure[aria-label^='Throughput'] canvas").count()).toBe(1);
  });
});
