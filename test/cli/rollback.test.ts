/**
 * `svc history` and `svc rollback` against a REAL embedded platform (this process, loopback) with
 * real Python workers and the real CLI (bin/svc.mjs), the app in a real git repository
 * (docs/platform.md, "History and rollback"):
 * - two deploys then a rollback while a client calls the endpoint without pause: no call fails;
 * - the second deploy removed an endpoint: the rollback brings it back with its id and settings;
 * - the history lists each switch, newest first, with its key, git commit and dirty flag, and the
 *   endpoints it added, changed (settings or manifest entry) and removed;
 * - without --yes and without a terminal, rollback asks for confirmation it cannot get, and changes nothing;
 * - a deploy key scoped to the app rolls back through the CLI as well, and the history names it.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { startPlatform, type RunningPlatform } from "../../platform/index.ts";
import { runSvc } from "../_support/cli.ts";

const APP = "rollback-app";

/** v1: `steady` with workers (1, 1) and `gone`; v2: `steady` with workers (1, 2), no `gone`. */
async function writeApp(root: string, version: string, withGone: boolean): Promise<void> {
  const gone = withGone ? `\n\n@Endpoint(name="gone", cpu="cpu3c-2-4", workers=(0, 3))\ndef gone() -> dict:\n    return {"version": VERSION}\n` : "";
  await writeFile(
    join(root, "workers.py"),
    `from svc import Endpoint\n\nVERSION = "${version}"\n\n\n@Endpoint(name="steady", cpu="cpu3c-2-4", workers=(1, ${withGone ? 1 : 2}))\ndef steady() -> dict:\n    return {"version": VERSION}\n${gone}`,
  );
}

const git = (root: string, ...args: string[]) => execFileSync("git", ["-C", root, ...args], { encoding: "utf8" }).trim();

describe("svc history and svc rollback (real platform, workers, CLI and git)", () => {
  let platform: RunningPlatform;
  let client: PlatformClient;
  let root: string;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "svc-rollback-platform-"));
    root = await mkdtemp(join(tmpdir(), "svc-rollback-app-"));
    await writeFile(join(root, "svc.config.ts"), `export default { app: "${APP}" };\n`);
    await writeFile(join(root, ".gitignore"), ".svc/\n");
    git(root, "init", "-q");
    git(root, "config", "user.email", "test@example.com");
    git(root, "config", "user.name", "test");
    platform = await startPlatform({ dataDir, port: 0, log: () => {}, rateLimits: false });
    client = createPlatformClient(platform);
    env = { ...process.env, PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey, NO_COLOR: "1" };
  });
  afterAll(async () => {
    await platform?.close();
    await rm(dataDir, { recursive: true, force: true });
    await rm(root, { recursive: true, force: true });
  });

  const svc = (...args: string[]) => runSvc([...args, "--root", root], { env, timeout: 180_000 });
  const environment = async () => (await client.getApp(APP))!.environments.find((e) => e.name === "production")!;

  it("rolls back under load with no failed call, brings back the removed endpoint as it was, and lists the history", { timeout: 600_000 }, async () => {
    await writeApp(root, "v1", true);
    git(root, "add", "-A");
    git(root, "commit", "-qm", "v1");
    const first = await svc("deploy", "--no-deps");
    expect(first.code, first.stderr).toBe(0);
    const v1 = await environment();
    const goneBefore = v1.endpoints.find((e) => e.name === "gone")!;
    const steady = v1.endpoints.find((e) => e.name === "steady")!;

    // one client calling `steady` without pause through the second deploy and the rollback
    const versions: string[] = [];
    const problems: string[] = [];
    let calling = true;
    const caller = (async () => {
      while (calling) {
        try {
          const job = await client.runsync(steady.id, {});
          if (job.status === "COMPLETED") versions.push((job.output as { version: string }).version);
          else problems.push(`${job.status} ${JSON.stringify(job.error ?? null)}`);
        } catch (error) {
          problems.push((error as Error).message);
        }
      }
    })();
    const answered = async (version: string) => {
      const from = versions.length;
      for (const deadline = Date.now() + 60_000; Date.now() < deadline && problems.length === 0; ) {
        if (versions.slice(from).filter((v) => v === version).length >= 2) return;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`no answers of ${version} (problems: ${problems.join("; ")})`);
    };
    await answered("v1");

    await writeApp(root, "v2", false);
    git(root, "add", "-A");
    git(root, "commit", "-qm", "v2");
    await writeFile(join(root, "notes.txt"), "not committed\n"); // the second deploy is from a dirty tree
    const second = await svc("deploy", "--no-deps");
    expect(second.code, second.stderr).toBe(0);
    await answered("v2");
    expect((await environment()).endpoints.map((e) => e.name)).toEqual(["steady"]);

    const refused = await svc("rollback"); // no terminal, no --yes
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("CONFIRMATION_REQUIRED");

    const back = await svc("rollback", "--yes");
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toContain(`to ${v1.activeBuildId}.`);
    expect(back.stdout).toMatch(/back: gone/);
    await answered("v1");
    calling = false;
    await caller;
    expect(problems).toEqual([]);
    expect(versions.indexOf("v2")).toBeGreaterThan(0);
    expect(versions.lastIndexOf("v1")).toBeGreaterThan(versions.lastIndexOf("v2"));

    // the removed endpoint is back as it was: its id, its settings, the old build's code
    const after = await environment();
    expect(after.activeBuildId).toBe(v1.activeBuildId);
    const goneAfter = after.endpoints.find((e) => e.name === "gone")!;
    expect({ id: goneAfter.id, workersMin: goneAfter.workersMin, workersMax: goneAfter.workersMax }).toEqual({
      id: goneBefore.id,
      workersMin: goneBefore.workersMin,
      workersMax: goneBefore.workersMax,
    });
    expect(goneAfter.workersMax).toBe(3);
    expect(after.endpoints.find((e) => e.name === "steady")!.workersMax).toBe(1); // v2 had 2
    const job = await client.runsync(goneAfter.id, {});
    expect(job.output).toEqual({ version: "v1" });

    const history = await svc("history", "--json");
    expect(history.code, history.stderr).toBe(0);
    const deploys = JSON.parse(history.stdout).deploys as Array<Record<string, unknown>>;
    const commits = git(root, "log", "--format=%H").split("\n"); // newest first: v2, v1
    expect(deploys.map((d) => [d.kind, d.keyName, d.gitCommit, d.gitDirty, d.active])).toEqual([
      ["rollback", "platform", commits[1], false, true],
      ["deploy", "platform", commits[0], true, false],
      ["deploy", "platform", commits[1], false, true],
    ]);
    expect(deploys[0]!.changes).toEqual({ added: ["gone"], changed: ["steady"], removed: [] });
    expect(deploys[1]!.changes).toEqual({ added: [], changed: ["steady"], removed: ["gone"] });
    expect(deploys[2]!.changes).toEqual({ added: ["gone", "steady"], changed: [], removed: [] });
    // a deploy key scoped to this app rolls back through the CLI too, and the history names it
    const { secret } = (
      await client.graphql<{ apiKeyCreate: { secret: string } }>("apiKeyCreate", "mutation($i: ApiKeyCreateInput!) { apiKeyCreate(input: $i) { secret } }", {
        i: { name: "ci-deploy", role: "deploy", app: APP },
      })
    ).apiKeyCreate;
    const byKey = await runSvc(["rollback", "--yes", "--root", root], { env: { ...env, PLATFORM_API_KEY: secret }, timeout: 180_000 });
    expect(byKey.code, byKey.stderr).toBe(0);
    const newest = JSON.parse((await svc("history", "--json")).stdout).deploys[0];
    expect([newest.kind, newest.keyName, newest.gitCommit]).toEqual(["rollback", "ci-deploy", commits[0]]);
    const table = await svc("history");
    expect(table.stdout).toContain("+gone");
    expect(table.stdout).toContain(`${commits[0]!.slice(0, 12)}+dirty`);
  });
});
