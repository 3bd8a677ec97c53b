/**
 * Where a worker's network cannot be isolated (issue 26): a state folder whose path is too long for
 * the worker channel's Unix socket (sun_path holds 107 bytes) leaves no channel to bind into the
 * sandbox. `--isolation strict` then refuses the worker (SANDBOX_REQUIRED, naming the network), and
 * the default says so once and runs it on the host's network. The channel itself is tested end to
 * end by test/platform/containment.test.ts and test/platform/egress.test.ts.
 */
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapUsable } from "../../platform/workers/sandbox.ts";
import { api, buildFixtureArtifact, deploy, startTestPlatform, tempDir, type TestPlatform, waitFinal } from "./_support.ts";

describe.runIf(process.platform === "linux")("a worker whose network cannot be isolated", () => {
  let base: string;
  let deep: string;
  const platforms: TestPlatform[] = [];

  beforeAll(async () => {
    base = await tempDir("svc-netless-");
    deep = join(base, "a-state-folder-whose-path-is-far-too-long-for-a-unix-socket", "platform-state");
    await mkdir(deep, { recursive: true });
  });
  afterAll(async () => {
    for (const p of platforms) await p.close();
    await rm(base, { recursive: true, force: true });
  });

  const start = async (isolation: "auto" | "strict", dir: string) => {
    const p = await startTestPlatform({ dataDir: dir, isolation });
    platforms.push(p);
    // a worker per queued job (scaler value 1), so two jobs at once start two workers
    const { endpoints } = await deploy(p, await buildFixtureArtifact(), [{ name: "work", workersMax: 2, scalerValue: 1 }]);
    const id = endpoints.work!.id;
    return {
      p,
      run: () => api(p, "POST", `/v2/${id}/runsync`, { input: { op: "echo", value: "hi" } }),
      runTwoAtOnce: async () => {
        const queued = await Promise.all([1, 2].map(() => api(p, "POST", `/v2/${id}/run`, { input: { op: "sleep", seconds: 1.5 } })));
        return Promise.all(queued.map((r) => waitFinal(p, id, r.body.id, 60_000)));
      },
    };
  };

  it("--isolation strict refuses it: the job fails with SANDBOX_REQUIRED naming the network", async () => {
    if (!(await bwrapUsable())) return expect.fail("bwrap is not usable here: scripts/setup.sh installs bubblewrap");
    const { run } = await start("strict", join(deep, "strict"));
    const r = await run();
    expect(r.body.status).toBe("FAILED");
    expect(JSON.parse(r.body.error)).toMatchObject({
      error_type: "WorkerStartError",
      error_message: expect.stringContaining("a worker's network cannot be isolated"),
    });
  }, 60_000);

  it("by default it runs on the host's network, and the platform says so once", async () => {
    if (!(await bwrapUsable())) return expect.fail("bwrap is not usable here: scripts/setup.sh installs bubblewrap");
    const { p, runTwoAtOnce } = await start("auto", join(deep, "auto"));
    const done = await runTwoAtOnce();
    expect(done.map((job) => job.status)).toEqual(["COMPLETED", "COMPLETED"]);
    expect(new Set(done.map((job) => job.workerId)).size, "two workers, each started on the host's network").toBe(2);
    expect(p.logs.filter((line) => line.includes("workers share the host's network"))).toHaveLength(1);
  }, 60_000);
});
