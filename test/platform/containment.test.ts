/**
 * Containment (issue 18), end to end: fixtures/containment/hostile is built and deployed with
 * `svc deploy`'s code to a real embedded platform (as root in CI, bwrap present) next to another
 * user's app (fixtures/containment/victim), and called as a user would. Each row of the issue's
 * table must fail: capabilities, remounts of /usr and /app, handle-based opens, /etc/shadow, the
 * platform's key and database, and other apps' env and routes with every credential the worker
 * holds; its own routes still answer.
 */
import { cp, mkdtemp, readdir, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { networkInterfaces } from "node:os";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { startPlatform, type RunningPlatform } from "../../platform/index.ts";
import { bwrapUsable } from "../../platform/workers/sandbox.ts";
import { api } from "./_support.ts";

const FIXTURES = new URL("../../fixtures/containment/", import.meta.url).pathname;
const asRoot = process.getuid?.() === 0;

interface Attempt {
  status: number;
  body: string;
}
interface Escape {
  uid: number;
  CapEff: string;
  NoNewPrivs: string;
  Seccomp: string;
  "remount /usr": { mount: string; write: string };
  "remount /app": { mount: string; write: string };
  handles: { open_by_handle_at: string; name_to_handle_at: string };
  paths: Record<string, string>;
  etc: string[];
  env: Record<string, string>;
  "own health": number;
  attacks: Array<{ variable: string; tries: Record<string, Attempt> }>;
}

describe.runIf(process.platform === "linux")("a hostile function on the embedded platform", () => {
  let platform: RunningPlatform;
  let client: PlatformClient;
  let dataDir: string;
  const roots: string[] = [];
  const logger = createLogger("error", () => undefined);

  const deployFixture = async (name: string) => {
    const root = await mkdtemp(join(tmpdir(), `svc-containment-${name}-`));
    roots.push(root);
    await cp(join(FIXTURES, name), root, { recursive: true });
    const { summary } = await runDeploy({ root, client, logger });
    return summary;
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "svc-containment-platform-"));
    platform = await startPlatform({ dataDir, port: 0, log: () => undefined, rateLimits: false });
    client = createPlatformClient(platform);
  }, 60_000);
  afterAll(async () => {
    await platform?.close();
    for (const dir of [dataDir, ...roots]) if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("fails every way out the issue lists, and reaches nothing of another app", async () => {
    if (!(await bwrapUsable())) return expect.fail("bwrap is not usable here: scripts/setup.sh installs bubblewrap");
    const victim = (await deployFixture("victim")).endpoints.find((e) => e.name === "vault")!;
    const hostile = (await deployFixture("hostile")).endpoints.find((e) => e.name === "escape")!;
    // a job of the other app, running while the hostile function tries to cancel it
    const victimJob = await api(platform, "POST", `/v2/${victim.id}/run`, { input: { seconds: 60 } });
    const probe = `svc-escape-${process.pid}-${Date.now()}`;
    const hostPaths = [join(dataDir, "api-key"), join(dataDir, "platform.db"), `/proc/1/root${dataDir}/api-key`];
    const run = await api(platform, "POST", `/v2/${hostile.id}/runsync`, {
      input: { host_paths: hostPaths, victim_endpoint: victim.id, victim_job: victimJob.body.id, probe_name: probe },
    });
    expect(run.body.status, JSON.stringify(run.body).slice(0, 2000)).toBe("COMPLETED");
    const out = run.body.output as Escape;

    // capabilities: none, and no way to gain them
    expect(out.CapEff).toBe("0000000000000000");
    expect(out.NoNewPrivs).toBe("1");
    expect(out.Seccomp).toBe("2");
    if (asRoot) expect(out.uid).not.toBe(0);

    // the image and the artifact stay read-only: no remount, nothing written on the host
    for (const dir of ["remount /usr", "remount /app"] as const) {
      expect(out[dir].mount, dir).toBe("Operation not permitted");
      expect(out[dir].write, dir).toBe("Read-only file system");
    }
    expect(existsSync(join("/usr", probe))).toBe(false);
    const builds = join(dataDir, "builds");
    for (const build of await readdir(builds)) expect(existsSync(join(builds, build, probe)), build).toBe(false);

    // no handle-based opens (the way to the host's / and from there to the platform's files)
    expect(out.handles).toEqual({ open_by_handle_at: "Operation not permitted", name_to_handle_at: "Operation not permitted" });

    // the image's own /etc; the platform's key and database are out of sight
    expect(out.paths["/etc/shadow"]).toBe("FileNotFoundError");
    expect(out.etc).not.toContain("shadow");
    expect(out.etc).toEqual(expect.arrayContaining(["passwd", "group", "hosts", "nsswitch.conf"]));
    for (const path of hostPaths) expect(out.paths[path], path).toBe("FileNotFoundError");

    // the worker holds no platform key, only one scoped to its own app and environment
    expect(Object.values(out.env)).not.toContain(platform.apiKey);
    expect(out.env.PLATFORM_API_KEY).toMatch(/^svcw\.env\./);
    expect(out["own health"]).toBe(200);

    // every credential it holds, on another app's env and routes and on routes outside its scope
    expect(out.attacks.map((a) => a.variable)).toEqual(expect.arrayContaining(["PLATFORM_API_KEY", "SVC_WORKER_TOKEN"]));
    for (const { variable, tries } of out.attacks) {
      for (const [what, attempt] of Object.entries(tries)) {
        expect([401, 403], `${variable}: ${what} answered ${attempt.status} ${attempt.body}`).toContain(attempt.status);
        expect(attempt.body).not.toContain("victim-literal-4b1d");
      }
    }
    const scoped = out.attacks.find((a) => a.variable === "PLATFORM_API_KEY")!.tries;
    expect(scoped.cancel!.status).toBe(403);
    expect(scoped.cancel!.body).toContain("KEY_SCOPE");
    expect(scoped.cancel!.body).toContain("environment production of app hostile");
    expect(JSON.parse(scoped["graphql endpoint env"]!.body).errors[0].extensions.code).toBe("KEY_SCOPE");

    // the other app's job was not cancelled
    const job = await api(platform, "GET", `/v2/${victim.id}/status/${victimJob.body.id}`);
    expect(["IN_QUEUE", "IN_PROGRESS"]).toContain(job.body.status);
    await api(platform, "POST", `/v2/${victim.id}/cancel/${victimJob.body.id}`, {});
  }, 240_000);

  it("reaches no port of the host or of another app's LB worker over the network; the victim's route answers through the platform", async () => {
    if (!(await bwrapUsable())) return expect.fail("bwrap is not usable here: scripts/setup.sh installs bubblewrap");
    const victimApp = await deployFixture("victim");
    const vaultApi = victimApp.endpoints.find((e) => e.name === "vault-api")!;
    const scanner = (await deployFixture("hostile")).endpoints.find((e) => e.name === "scan")!;
    // the victim's LB worker up, answering through the platform's proxy
    const route = await fetch(`${platform.url}/lb/${vaultApi.id}/secret`, { headers: { authorization: `Bearer ${platform.apiKey}` } });
    expect(route.status).toBe(200);
    expect(await route.json()).toEqual({ derived: "victim-literal-4b1d".split("").reverse().join("") });
    const lbWorker = platform.context.supervisor.forEndpoint(vaultApi.id).find((w) => w.ready)!;
    expect(lbWorker.lbSocket, "the LB worker listens on its channel's socket").toMatch(/lb\.sock$/);

    // a service of the host's, on every address
    const listener = createServer((socket) => socket.end("host service"));
    await new Promise<void>((resolve) => listener.listen(0, "0.0.0.0", resolve));
    const hostPort = (listener.address() as AddressInfo).port;
    const platformPort = Number(new URL(platform.url).port);
    const hostAddresses = Object.values(networkInterfaces())
      .flat()
      .filter((a) => a && a.family === "IPv4" && !a.internal)
      .map((a) => a!.address);
    const targets = [
      { host: "127.0.0.1", port: hostPort },
      ...hostAddresses.map((host) => ({ host, port: hostPort })),
      ...hostAddresses.map((host) => ({ host, port: platformPort })),
      { host: "127.0.0.1", port: lbWorker.lbPort! }, // where the LB worker listened before it had a channel
    ];
    try {
      const run = await api(platform, "POST", `/v2/${scanner.id}/runsync`, { input: { targets } });
      expect(run.body.status, JSON.stringify(run.body).slice(0, 2000)).toBe("COMPLETED");
      const out = run.body.output as { open: number[]; tried: Record<string, string>; "platform url": number | string };
      // its own loopback holds only the relay of the platform's URL (the channel)
      expect(out.open).toEqual([platformPort]);
      expect(typeof out["platform url"], String(out["platform url"])).toBe("number");
      for (const [where, got] of Object.entries(out.tried)) expect(got, where).not.toBe("open");
    } finally {
      listener.close();
    }
    expect((await fetch(`${platform.url}/lb/${vaultApi.id}/secret`, { headers: { authorization: `Bearer ${platform.apiKey}` } })).status).toBe(200);
  }, 240_000);
});
