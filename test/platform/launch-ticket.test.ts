/**
 * The remote worker's launch ticket (issue 35), without a Ray cluster: the real launcher
 * (`svc worker launch`, a child process, as a Ray job's entrypoint is) started by a stand-in for the
 * Ray backend that runs it on this machine (named: the one part that is not Ray), with the job's
 * variables the Ray backend sets. The ticket is redeemed once for the launch and the token; it opens
 * no worker route; presented again it is refused and the worker ends; a forged one is refused;
 * where the launcher runs as root, the worker runs as its app's pool user; and the worker has a
 * network namespace of its own, reaching the platform through the launcher's relay and nothing on
 * the node's loopback (where a Ray dashboard listens by default).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { type AddressInfo, createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EndpointRecord } from "../../platform/store/index.ts";
import type { BackendHooks, ClusterView, WorkerBackend } from "../../platform/workers/backends/backend.ts";
import { remoteLaunchOf } from "../../platform/workers/backends/remote-launch.ts";
import type { LaunchPlan, WorkerReach } from "../../platform/workers/launch-plan.ts";
import type { WorkerInfo } from "../../platform/workers/worker-info.ts";
import { buildAppArtifact, saveImageEndpoint } from "./_app-artifact.ts";
import { api, startTestPlatform, tempDir, uploadArtifact, waitFinal, waitFor, type TestPlatform } from "./_support.ts";

const BIN = new URL("../../bin/svc.mjs", import.meta.url).pathname;

/** The stand-in for Ray: each worker's launcher a child process here, given what a Ray job is given. */
class LaunchersHere implements WorkerBackend {
  readonly name = "ray" as const;
  readonly tickets = new Map<string, string>();
  private readonly children = new Set<ChildProcess>();
  constructor(
    private readonly url: () => string,
    private readonly nodeDir: string,
  ) {}
  reach(): WorkerReach {
    return { apiBase: this.url(), here: false, ticket: true };
  }
  places(endpoint: EndpointRecord): boolean {
    return endpoint.type === "QB";
  }
  async start(plan: LaunchPlan, w: WorkerInfo, hooks: BackendHooks): Promise<void> {
    const ticket = plan.ticket!;
    this.tickets.set(w.id, ticket);
    hooks.started(null, Date.now());
    const env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      SVC_WORKER_ID: w.id,
      SVC_LAUNCH_TICKET: ticket,
      SVC_API_BASE: this.url(),
      SVC_NODE_DIR: this.nodeDir,
    };
    const child = spawn(process.execPath, [BIN, "worker", "launch"], { env, stdio: "ignore" });
    this.children.add(child);
    child.on("exit", (code, signal) => {
      this.children.delete(child);
      hooks.exited(signal ? `signal ${signal}` : `code ${code}`);
    });
    w.remote = {
      backend: "ray",
      runId: w.id,
      buildId: plan.target.build.id,
      node: "here",
      unplaced: false,
      launch: remoteLaunchOf(plan),
      signal: (s) => child.kill(s),
    };
  }
  async cluster(): Promise<ClusterView> {
    return { backend: "ray", address: "here", nodes: [], unplaced: [] };
  }
  async close(): Promise<void> {
    for (const child of this.children) child.kill("SIGKILL");
  }
}

/** What the worker is, and whether it reaches a service on the node's loopback (where a Ray dashboard listens by default). */
const WHO = `import os, socket\n\nfrom svc import Endpoint\n\n\n@Endpoint(name="who")\ndef who(port: int) -> dict:\n    s = socket.socket()\n    s.settimeout(2)\n    reached = s.connect_ex(("127.0.0.1", port)) == 0\n    s.close()\n    return {"uid": os.getuid(), "token": "SVC_WORKER_TOKEN" in os.environ, "ticket": "SVC_LAUNCH_TICKET" in os.environ, "reached": reached}\n`;

describe.runIf(process.platform === "linux")("a remote worker's launch ticket", () => {
  let p: TestPlatform;
  let launchers: LaunchersHere;
  beforeAll(async () => {
    p = await startTestPlatform();
    launchers = new LaunchersHere(() => p.url, await tempDir("svc-node-"));
    (p.context.supervisor as { remote?: WorkerBackend }).remote = launchers;
  }, 60_000);
  afterAll(async () => {
    await launchers?.close();
    await p?.dispose();
  });

  it("is redeemed once by the launcher, opens no worker route, and presented again is refused and ends the worker", async () => {
    const { appId, buildId } = await uploadArtifact(
      p,
      await buildAppArtifact({ "app/__init__.py": "", "app/who.py": WHO }, [{ name: "who", module: "app.who", functions: ["who"] }]),
      "ticket-app",
    );
    const e = await saveImageEndpoint(p, buildId, { name: "who" });
    const dashboard = createServer((socket) => socket.end("dashboard"));
    await new Promise<void>((resolve) => dashboard.listen(0, "127.0.0.1", resolve));
    const r = await api(p, "POST", `/v2/${e.id}/runsync`, { input: { port: (dashboard.address() as AddressInfo).port } });
    const out = r.body.status === "COMPLETED" ? r.body : await waitFinal(p, e.id, r.body.id, 120_000);
    dashboard.close();
    expect(out.status, JSON.stringify(out).slice(0, 2000)).toBe("COMPLETED");
    expect(out.output).toMatchObject({ token: true, ticket: false }); // the worker gets its token, not the ticket
    // its own network namespace: the node's loopback services are out of reach, the platform through its channel
    expect(out.output.reached, "a listener on the node's loopback").toBe(false);
    if (process.getuid?.() === 0) expect(out.output.uid).toBe((await p.context.supervisor.uids!.userFor(appId)).uid);

    const w = p.context.supervisor.forEndpoint(e.id).find((x) => !x.exited)!;
    expect(w.remote).toBeDefined();
    const ticket = launchers.tickets.get(w.id)!;
    const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
    // the ticket opens no worker route and no API route
    for (const route of ["ping", "job-take", "artifact", "signals"]) {
      const res = await fetch(`${p.url}/v2/_worker/${w.id}/${route}`, bearer(ticket));
      expect(res.status, route).toBe(401);
    }
    expect((await fetch(`${p.url}/v2/${e.id}/health`, bearer(ticket))).status).toBe(401);
    // a forged ticket: refused, and the worker keeps running
    const forged = await fetch(`${p.url}/v2/_worker/${w.id}/launch`, bearer("wkl_forged"));
    expect(forged.status).toBe(401);
    expect(await forged.json()).toMatchObject({ code: "WORKER_TICKET_INVALID" });
    expect(w.exited).toBe(false);
    // the real ticket again: refused, and the worker ends with its token
    const again = await fetch(`${p.url}/v2/_worker/${w.id}/launch`, bearer(ticket));
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ code: "WORKER_LAUNCH_TAKEN" });
    await waitFor("the worker to end", () => w.exited, 10_000);
    expect((await fetch(`${p.url}/v2/_worker/${w.id}/launch`, bearer(ticket))).status).toBe(401);
  }, 180_000);
});
