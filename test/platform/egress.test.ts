/**
 * A sandboxed worker's egress (issue 26), end to end: fixtures/egress deployed to a real embedded
 * platform (root, bwrap and slirp4netns, as CI has them). "Outside" is a host of its own: a network
 * namespace the test makes, joined to the host by a veth pair, with a listener at its address (this
 * machine may have no internet). A listener of the host's own, on all its addresses, stands for the
 * host's services. The `online` endpoint reaches the outside host and none of the host's addresses;
 * the `network=False` endpoint reaches nothing, not even through a webhook the platform would send.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { createServer as createHttpServer } from "node:http";
import { createServer, type AddressInfo, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { startPlatform, type RunningPlatform } from "../../platform/index.ts";
import { bwrapUsable } from "../../platform/workers/sandbox.ts";
import { egressAvailable } from "../../platform/workers/sandbox-egress.ts";
import { api } from "./_support.ts";

const FIXTURE = new URL("../../fixtures/egress/", import.meta.url).pathname;
const asRoot = process.getuid?.() === 0;
const tag = (process.pid % 200) + 20;
const NS = `svc-egress-${process.pid}`;
const [HOST_SIDE, OUTSIDE] = [`10.213.${tag}.1`, `10.213.${tag}.2`];
const OUTSIDE_PORT = 8081;
const ip = (...args: string[]) => execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });

describe.runIf(process.platform === "linux" && asRoot)("a sandboxed worker's egress", () => {
  let platform: RunningPlatform;
  let dataDir: string;
  let root: string;
  let outside: ChildProcess | undefined;
  let hostListener: Server;

  beforeAll(async () => {
    // the outside host: its own namespace, reached through a veth pair (the host's end is one of the host's addresses)
    ip("netns", "add", NS);
    ip("link", "add", `svce${tag}`, "type", "veth", "peer", "name", `svcp${tag}`);
    ip("link", "set", `svcp${tag}`, "netns", NS);
    ip("addr", "add", `${HOST_SIDE}/30`, "dev", `svce${tag}`);
    ip("link", "set", `svce${tag}`, "up");
    ip("netns", "exec", NS, "ip", "addr", "add", `${OUTSIDE}/30`, "dev", `svcp${tag}`);
    ip("netns", "exec", NS, "ip", "link", "set", `svcp${tag}`, "up");
    outside = spawn(
      "ip",
      [
        "netns",
        "exec",
        NS,
        "python3",
        "-c",
        `import socket\ns = socket.create_server(("${OUTSIDE}", ${OUTSIDE_PORT}))\nprint("ready", flush=True)\nwhile True:\n    c, _ = s.accept()\n    c.sendall(b"outside")\n    c.close()`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise<void>((resolve, reject) => {
      outside!.stdout!.once("data", () => resolve());
      outside!.once("exit", (code) => reject(new Error(`the outside listener exited ${code}`)));
    });
    hostListener = createServer((socket) => socket.end("host service"));
    await new Promise<void>((resolve) => hostListener.listen(0, "0.0.0.0", resolve));

    dataDir = await mkdtemp(join(tmpdir(), "svc-egress-platform-"));
    platform = await startPlatform({ dataDir, port: 0, log: () => undefined, rateLimits: false });
    root = await mkdtemp(join(tmpdir(), "svc-egress-app-"));
    await cp(FIXTURE, root, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await platform?.close();
    outside?.kill();
    hostListener?.close();
    try {
      ip("netns", "del", NS); // takes the veth pair with it
    } catch {
      /* never made */
    }
    for (const dir of [dataDir, root]) if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("reaches an outside host and none of the host's addresses; with network=False it reaches nothing", async () => {
    if (!(await bwrapUsable())) return expect.fail("bwrap is not usable here: scripts/setup.sh installs bubblewrap");
    if (!(await egressAvailable())) return expect.fail("slirp4netns is not installed: scripts/setup.sh installs it");
    const { summary } = await runDeploy({ root, client: createPlatformClient(platform), logger: createLogger("error", () => undefined) });
    const id = (name: string) => summary.endpoints.find((e) => e.name === name)!.id;
    const hostPort = (hostListener.address() as AddressInfo).port;
    const targets = [
      { host: OUTSIDE, port: OUTSIDE_PORT },
      { host: HOST_SIDE, port: hostPort }, // the host's own address on the way out
      { host: "10.0.2.2", port: hostPort }, // slirp's gateway: the host's loopback unless disabled
      { host: "127.0.0.1", port: hostPort },
    ];
    const reach = async (name: string) => {
      const run = await api(platform, "POST", `/v2/${id(name)}/runsync`, { input: { targets } });
      expect(run.body.status, JSON.stringify(run.body).slice(0, 2000)).toBe("COMPLETED");
      return run.body.output as Record<string, string>;
    };
    const online = await reach("online");
    expect(online[`${OUTSIDE}:${OUTSIDE_PORT}`]).toBe("open: outside");
    for (const t of targets.slice(1)) expect(online[`${t.host}:${t.port}`], `${t.host}:${t.port}`).not.toMatch(/^open/);
    const offline = await reach("offline");
    for (const t of targets) expect(offline[`${t.host}:${t.port}`], `${t.host}:${t.port}`).not.toMatch(/^open/);
  }, 120_000);

  it("cannot reach the host through a webhook: a network=False worker's job with a loopback webhook is refused", async () => {
    const { summary } = await runDeploy({ root, client: createPlatformClient(platform), logger: createLogger("error", () => undefined) });
    const hook = summary.endpoints.find((e) => e.name === "hook")!.id;
    let posts = 0;
    const receiver = createHttpServer((_req, res) => {
      posts++;
      res.end("ok");
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const webhook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const run = await api(platform, "POST", `/v2/${hook}/runsync`, { input: { webhook } });
      expect(run.body.status, JSON.stringify(run.body).slice(0, 2000)).toBe("COMPLETED");
      expect(run.body.output).toMatchObject({ status: 400, body: { code: "WEBHOOK_REFUSED" } });
      await new Promise((resolve) => setTimeout(resolve, 1000)); // a delivery would come within the job's run and the first attempt
      expect(posts).toBe(0);
    } finally {
      receiver.close();
    }
  }, 120_000);
});
