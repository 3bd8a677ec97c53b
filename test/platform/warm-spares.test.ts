/**
 * Warm spares (platform/workers/backends/warm-spares.ts, issue 42), end to end on a real platform with bwrap:
 * a dev server's endpoint (`live-probe` runs the manifest's `probe`) moved to a new build is answered
 * by the interpreter started before the move — the spare, not a cold worker — and that process is
 * a worker like any other: in the sandbox, as its app's pool uid (as root), seeing its own build
 * at /app and nothing of the earlier one nor of the platform's folder, its svc runtime loaded from the
 * platform's .pyc (platform/workers/backends/runtime-bytecode.ts). A spare imports the platform's
 * copy of the runtime while it waits: kept when the build's svc/ is that copy, dropped for the
 * build's own when it is not. A spare is never claimed for another app's build: it ends, and a cold
 * worker of that app's own uid answers.
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapUsable } from "../../platform/workers/sandbox.ts";
import { buildAppArtifact, saveImageEndpoint } from "./_app-artifact.ts";
import { api, startTestPlatform, uploadArtifact, waitFinal, waitFor, type TestPlatform } from "./_support.ts";

const asRoot = process.getuid?.() === 0;

/** The probe answers its build's version, who it is, when its process started and what it sees. */
const probe = (version: number, dataDir: string) => `import os
import sys

from svc import Endpoint

VERSION = ${version}


def started():
    with open("/proc/self/stat", encoding="utf-8") as f:
        stat = f.read()
    return int(stat[stat.rindex(")") + 2 :].split()[19])


@Endpoint(name="probe")
def probe() -> dict:
    return {
        "version": VERSION,
        "uid": os.getuid(),
        "started": started(),
        "app": sorted(os.listdir("/app")),
        "v1 only": os.path.exists("/app/app/v1_only.py"),
        "platform folder": os.path.exists(${JSON.stringify(dataDir)}),
        "runtime bytecode": os.path.exists(sys.modules["svc.worker"].__cached__),
        "svc from": os.path.dirname(sys.modules["svc"].__file__),
        "svc modules from": sorted({os.path.dirname(m.__file__) for n, m in list(sys.modules.items()) if n.startswith("svc") and getattr(m, "__file__", None)}),
    }
`;

/** A process's start (clock ticks since boot), as the host's /proc tells it. */
const startedOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
};

describe.runIf(process.platform === "linux")("warm spares", { timeout: 120_000 }, () => {
  let p: TestPlatform;
  let sandboxed = false;
  beforeAll(async () => {
    p = await startTestPlatform();
    sandboxed = await bwrapUsable();
  }, 60_000);
  afterAll(async () => {
    await p?.dispose();
  });

  const build = async (app: string, version: number, extra: Record<string, string> = {}) => {
    const files = { "app/__init__.py": "", "app/probe.py": probe(version, p.dataDir), ...extra };
    const artifact = await buildAppArtifact(files, [{ name: "probe", module: "app.probe", functions: ["probe"] }]);
    return uploadArtifact(p, artifact, app);
  };
  const run = async (endpointId: string) => {
    const r = await api(p, "POST", `/v2/${endpointId}/runsync`, { input: {} });
    const out = r.body.status === "COMPLETED" || r.body.status === "FAILED" ? r.body : await waitFinal(p, endpointId, r.body.id, 60_000);
    expect(out.status, JSON.stringify(out).slice(0, 2000)).toBe("COMPLETED");
    return out.output as {
      version: number;
      uid: number;
      started: number;
      app: string[];
      "v1 only": boolean;
      "platform folder": boolean;
      "runtime bytecode": boolean;
      "svc from": string;
      "svc modules from": string[];
    };
  };
  const spareOf = (endpointId: string) => waitFor("a warm spare", () => p.context.supervisor.local.spares.held(endpointId)?.pid, 30_000);

  it("a live- endpoint moved to a new build is answered by its spare, started before the move: sandboxed, its app's uid, its build only", async (ctx) => {
    if (!sandboxed) ctx.skip();
    const v1 = await build("spare-app", 1, { "app/v1_only.py": "" });
    const endpoint = await saveImageEndpoint(p, v1.buildId, { name: "live-probe" });
    const first = await run(endpoint.id);
    expect(first.version).toBe(1);

    const sparePid = await spareOf(endpoint.id);
    const spareStarted = startedOf(sparePid);
    const bytecode = join(p.dataDir, "bytecode");
    await waitFor("the runtime's bytecode", () => existsSync(bytecode) && readdirSync(bytecode).some((name) => !name.includes(".tmp-")), 30_000);
    const v2 = await build("spare-app", 2);
    await saveImageEndpoint(p, v2.buildId, { id: endpoint.id, name: "live-probe" });
    const second = await run(endpoint.id);

    expect(second.version).toBe(2);
    expect(second.started).toBe(spareStarted); // the process that answered is the one started before the move
    const worker = p.context.supervisor.forEndpoint(endpoint.id).find((w) => !w.exited && !w.stopping);
    expect(worker?.pid).toBe(sparePid);
    if (asRoot) {
      expect(second.uid).not.toBe(0);
      expect(second.uid).toBe(first.uid); // the app's own pool uid
    }
    expect(second.app).toEqual(readdirSync(join(p.dataDir, "builds", v2.buildId)).sort());
    expect(second["v1 only"]).toBe(false);
    expect(second["platform folder"]).toBe(false);
    expect(second["runtime bytecode"]).toBe(true); // the runtime's .pyc, linked in: not compiled by the worker
  });

  it("a spare imports the platform's runtime while it waits: kept for a build whose svc/ is that runtime, dropped for one whose svc/ is not", async (ctx) => {
    if (!sandboxed) ctx.skip();
    const v1 = await build("spare-runtime-app", 1);
    const endpoint = await saveImageEndpoint(p, v1.buildId, { name: "live-probe-runtime" });
    expect((await run(endpoint.id))["svc from"]).toBe("/app/svc"); // a cold worker: its build's own
    const bytecode = join(p.dataDir, "bytecode");
    await waitFor("the runtime's bytecode", () => existsSync(bytecode) && readdirSync(bytecode).some((name) => !name.includes(".tmp-")), 30_000);
    // each move's worker is a spare; the one after the compile imported the runtime while it waited
    const moved = async (version: number, extra: Record<string, string> = {}) => {
      const spare = await spareOf(endpoint.id);
      const next = await build("spare-runtime-app", version, extra);
      await saveImageEndpoint(p, next.buildId, { id: endpoint.id, name: "live-probe-runtime" });
      const out = await run(endpoint.id);
      expect(out.version).toBe(version);
      expect(startedOf(spare)).toBe(out.started); // answered by that spare
      return out;
    };
    await moved(2); // its spare may have started before the compile was there
    const same = await moved(3);
    expect(same["svc from"]).toBe("/svc-runtime/svc");
    expect(same["svc modules from"]).toEqual(["/svc-runtime/svc"]);
    // an svc/ that is not the platform's (another svc version, an edited runtime): the build's own, every module of it
    const other = await moved(4, { "svc/_added.py": "ADDED = True\n" });
    expect(other["svc from"]).toBe("/app/svc");
    expect(other["svc modules from"]).toEqual(["/app/svc"]);
  });

  it("a spare is never claimed for another app's build: it ends, and a cold worker of that app answers", async (ctx) => {
    if (!sandboxed) ctx.skip();
    const a = await build("spare-app-a", 1);
    const endpoint = await saveImageEndpoint(p, a.buildId, { name: "live-probe-a" });
    const first = await run(endpoint.id);
    const sparePid = await spareOf(endpoint.id);
    const spareStarted = startedOf(sparePid);

    const b = await build("spare-app-b", 2);
    await saveImageEndpoint(p, b.buildId, { id: endpoint.id, name: "live-probe-a" });
    const second = await run(endpoint.id);

    expect(second.version).toBe(2);
    expect(second.started).not.toBe(spareStarted);
    if (asRoot) expect(second.uid).not.toBe(first.uid); // app b's uid, not app a's
    await waitFor("the spare to end", () => !existsSync(`/proc/${sparePid}`) || readFileSync(`/proc/${sparePid}/stat`, "utf8").includes(") Z"), 10_000);
  });
});
