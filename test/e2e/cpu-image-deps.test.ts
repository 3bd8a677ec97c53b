/**
 * An image holds what the build drops for it (core/images.ts, docs/deploy.md "Base images"): pandas
 * on a `cpu=` endpoint, installed by real pip from PyPI, deployed to a real embedded platform whose
 * CPU image has no numpy, answers a runsync. The build keeps numpy in the artifact and warns about
 * nothing.
 */
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient } from "../../core/client/index.ts";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { startPlatform, type RunningPlatform } from "../../platform/index.ts";
import { captureLogger, FIXTURES, pypiReachable } from "../plugins/_helpers.ts";

const online = await pypiReachable();
if (!online) console.warn("the pandas-on-CPU deploy test is skipped: https://pypi.org did not answer");

describe.runIf(online)("pandas on a cpu= endpoint (real pip, real platform)", () => {
  let platform: RunningPlatform;
  let root: string;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "svc-pandas-platform-"));
    root = join(await mkdtemp(join(tmpdir(), "svc-pandas-app-")), "pandas-cpu");
    await cp(join(FIXTURES, "pandas-cpu"), root, { recursive: true });
    platform = await startPlatform({ dataDir, port: 0, log: () => {} });
  });
  afterAll(async () => {
    await platform?.close();
    await rm(dataDir, { recursive: true, force: true });
    await rm(join(root, ".."), { recursive: true, force: true });
  });

  it("packs numpy with pandas, deploys, and the CPU worker imports both", { timeout: 300_000 }, async () => {
    const client = createPlatformClient(platform);
    const logger = captureLogger();
    const { ctx, summary } = await runDeploy({ root, client, logger });
    expect(ctx.excluded).toEqual([]);
    const paths = ctx.artifact!.entries.map((e) => e.path);
    expect(paths).toContain("site-packages/numpy/__init__.py");
    expect(paths).toContain("site-packages/pandas/__init__.py");
    expect(logger.warnings).toEqual([]);

    const frames = summary.endpoints.find((e) => e.name === "frames")!;
    const job = await client.runsync(frames.id, { values: [1, 2, 3, 4] }, { timeoutMs: 120_000 });
    expect(job.status, JSON.stringify(job)).toBe("COMPLETED");
    expect(job.output).toEqual({ sum: 10, mean: 2.5, pandas: "2.2.3" });
  });
});
