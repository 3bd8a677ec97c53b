/**
 * `svc platform status` tells scripts whether a platform runs: exit 0 when one does, 1 when none;
 * `svc logs` reaches the running embedded platform with no PLATFORM_API_URL; `npm run demo`'s closing
 * hint (scripts/_demo-hint.sh) names the platform it used.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runSvc } from "../_support/cli.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const svc = (args: string[], env: NodeJS.ProcessEnv = {}) => runSvc(args, { env: { ...process.env, NO_COLOR: "1", ...env } });

describe("svc platform status", { timeout: 90_000 }, () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) {
      await svc(["platform", "stop", "--dir", dir]);
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("exits 1 when nothing runs and 0 while a platform runs", async () => {
    const dir = await mkdtemp(join(tmpdir(), "svc-status-"));
    dirs.push(dir);
    const none = await svc(["platform", "status", "--dir", dir]);
    expect(none.code).toBe(1);
    expect(none.stdout).toContain("No platform is running");
    const noneJson = await svc(["platform", "status", "--dir", dir, "--json"]);
    expect(noneJson.code).toBe(1);
    expect(JSON.parse(noneJson.stdout)).toMatchObject({ running: false });

    const started = await svc(["platform", "start", "--detach", "--port", "0", "--dir", dir]);
    expect(started.code, started.stderr).toBe(0);
    const running = await svc(["platform", "status", "--dir", dir, "--json"]);
    expect(running.code).toBe(0);
    expect(JSON.parse(running.stdout)).toMatchObject({ running: true, url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
    // which worker limits hold here (docs/platform.md, "Resources"): cgroups as root, else why none
    const text = await svc(["platform", "status", "--dir", dir]);
    expect(text.stdout).toMatch(process.getuid?.() === 0 ? /^Worker limits: cgroup v[12] \(memory, pids, cpu\)$/m : /^Worker limits: /m);

    // With no PLATFORM_API_URL, svc logs finds this embedded platform (the same client code as for a hosted one).
    const embedded = { SVC_PLATFORM_DIR: dir, PLATFORM_API_URL: "", PLATFORM_API_KEY: "" };
    const logs = await svc(["logs", "live-nobody", "--root", dir], embedded);
    expect(logs.code).toBe(1);
    expect(logs.stderr).toContain('[NOT_FOUND] Endpoint "live-nobody" was not found.');

    // `npm run demo`'s closing hint stops this platform from a shell where SVC_PLATFORM_DIR is not exported.
    const hint = execFileSync("bash", ["-c", "source scripts/_demo-hint.sh && platform_stop_hint"], {
      cwd: REPO,
      env: { ...process.env, SVC_PLATFORM_DIR: dir },
    }).toString();
    const command = /stop it with: \.\/bin\/svc\.mjs (.*)$/m.exec(hint)![1]!.split(" ");
    expect(command).toEqual(["platform", "stop", "--dir", dir]);
    const elsewhere = { SVC_PLATFORM_DIR: "", HOME: await mkdtemp(join(tmpdir(), "svc-home-")) };
    expect((await svc(command, elsewhere)).code).toBe(0);
    expect((await svc(["platform", "status", "--dir", dir])).code).toBe(1);
  });
});
