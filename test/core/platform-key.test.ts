/**
 * Which platform and which key, through the real CLI (node bin/svc.mjs) against a real embedded
 * platform on loopback. The platform runs in this process on its state folder (SVC_PLATFORM_DIR,
 * platform.json naming this process), exactly as the CLI finds one that `svc platform start` runs.
 * With no PLATFORM_API_URL, a PLATFORM_API_KEY the user set (.env or shell) is checked against it
 * before any build; the embedded key is used only when none is set. A PLATFORM_API_URL with no
 * scheme or a port nobody answers is a catalogue error naming the URL, never a stack trace.
 */
import { existsSync } from "node:fs";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlatform, type RunningPlatform } from "../../platform/server.ts";
import { removeState, writeState } from "../../platform/state-dir.ts";
import { runSvc, type CliResult } from "../_support/cli.ts";

const FIXTURE = new URL("../../fixtures/deploy-app/", import.meta.url).pathname;
const REMEDY = "Check that PLATFORM_API_KEY is set correctly, in .env or exported";

describe("PLATFORM_API_KEY and PLATFORM_API_URL, through the CLI", { timeout: 120_000 }, () => {
  let stateDir: string;
  let platform: RunningPlatform;
  const roots: string[] = [];

  /** `svc <args> --root <root>` with exactly the given platform variables (none inherited from this shell). */
  const svc = (args: string[], root: string, vars: Record<string, string> = {}) => {
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1", SVC_PLATFORM_DIR: stateDir, ...vars };
    for (const name of ["PLATFORM_API_URL", "PLATFORM_API_KEY"]) if (!(name in vars)) delete env[name];
    return runSvc([...args, "--root", root], { env });
  };

  const project = async (dotEnv?: string) => {
    const root = await mkdtemp(join(tmpdir(), "svc-key-app-"));
    roots.push(root);
    await cp(FIXTURE, root, { recursive: true });
    if (dotEnv !== undefined) await writeFile(join(root, ".env"), dotEnv);
    return root;
  };

  const expectAuthFailed = (result: CliResult, root: string) => {
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain("[AUTH_FAILED]");
    expect(result.stderr).toContain(REMEDY);
    expect(result.stderr).toContain(join(stateDir, "api-key"));
    expect(result.stderr).not.toMatch(/^\s+at /m);
    // Checked before any build: nothing was written under .svc/.
    expect(existsSync(join(root, ".svc"))).toBe(false);
  };

  beforeAll(async () => {
    stateDir = await mkdtemp(join(tmpdir(), "svc-key-platform-"));
    platform = await startPlatform({ dataDir: stateDir, port: 0, log: () => {} });
    writeState(stateDir, { pid: process.pid, url: platform.url, startedAt: new Date().toISOString() });
  });
  afterAll(async () => {
    removeState(stateDir);
    await platform?.close();
    for (const root of [...roots, stateDir]) if (root) await rm(root, { recursive: true, force: true });
  });

  it.each(["deploy", "run", "undeploy"])("a wrong key in .env and no PLATFORM_API_URL: `svc %s` is AUTH_FAILED, exit 1, before any build", async (command) => {
    const root = await project("PLATFORM_API_KEY=wrong-from-dotenv\nPLATFORM_API_URL=\n");
    const args = command === "run" ? ["run", "--port", "0", "--no-reload"] : command === "undeploy" ? ["undeploy", "--yes"] : [command];
    expectAuthFailed(await svc(args, root), root);
  });

  it.each(["deploy", "run", "undeploy"])("a wrong key in the shell and no PLATFORM_API_URL: `svc %s` is AUTH_FAILED, exit 1", async (command) => {
    const root = await project();
    const args = command === "run" ? ["run", "--port", "0", "--no-reload"] : command === "undeploy" ? ["undeploy", "--yes"] : [command];
    expectAuthFailed(await svc(args, root, { PLATFORM_API_KEY: "wrong-from-shell" }), root);
  });

  it("the shell's key wins over .env's (a right key in .env does not hide a wrong exported one)", async () => {
    const root = await project(`PLATFORM_API_KEY=${platform.apiKey}\n`);
    expectAuthFailed(await svc(["undeploy", "--yes"], root, { PLATFORM_API_KEY: "wrong-from-shell" }), root);
  });

  it("the right key in .env is used as given, with no word about the embedded key", async () => {
    const root = await project(`PLATFORM_API_KEY=${platform.apiKey}\n`);
    const result = await svc(["app", "list", "--json"], root);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: true });
    expect(result.stderr).not.toContain("PLATFORM_API_KEY is not set");
  });

  it("no key set anywhere: the embedded platform's own key, and svc says so once", async () => {
    const root = await project("PLATFORM_API_KEY=\n");
    const result = await svc(["app", "list", "--json"], root);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: true });
    const notices = result.stderr.split("\n").filter((line) => line.includes("PLATFORM_API_KEY is not set"));
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain(platform.url);
    expect(notices[0]).toContain(join(stateDir, "api-key"));
  });

  it.each(["127.0.0.1:8787", "localhost:8787"])("PLATFORM_API_URL=%s (no scheme) is PLATFORM_URL_INVALID naming it, before any build", async (url) => {
    const root = await project();
    const result = await svc(["deploy"], root, { PLATFORM_API_URL: url, PLATFORM_API_KEY: "k" });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("[PLATFORM_URL_INVALID]");
    expect(result.stderr).toContain(`"${url}"`);
    expect(result.stderr).toContain(`http://${url}`);
    expect(result.stderr).not.toContain("TypeError");
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(existsSync(join(root, ".svc"))).toBe(false);
  });

  it("a port nobody answers on, and one fetch refuses, are PLATFORM_UNREACHABLE naming the URL", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    await new Promise((resolve) => server.close(resolve));
    const root = await project();
    for (const url of [`http://127.0.0.1:${port}`, "http://127.0.0.1:1"]) {
      const result = await svc(["deploy"], root, { PLATFORM_API_URL: url, PLATFORM_API_KEY: "k" });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("[PLATFORM_UNREACHABLE]");
      expect(result.stderr).toContain(`Cannot reach the platform at ${url}`);
      expect(result.stderr).toContain("PLATFORM_API_URL");
      expect(result.stderr).not.toContain("fetch failed");
      expect(result.stderr).not.toMatch(/^\s+at /m);
    }
    expect(existsSync(join(root, ".svc"))).toBe(false);
  });
});
