/**
 * The runtime's bytecode (platform/workers/backends/runtime-bytecode.ts): compiled once per
 * interpreter into the platform's state folder, in the background (the platform's close waits for it
 * through `close`, else removing that folder right after a close races the compile: ENOTEMPTY, seen
 * in CI), and linked into the builds workers start from.
 */
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { RuntimeBytecode } from "../../platform/workers/backends/runtime-bytecode.ts";
import { bwrapUsable } from "../../platform/workers/sandbox.ts";
import { buildAppArtifact, saveImageEndpoint } from "./_app-artifact.ts";
import { api, buildFixtureArtifact, deploy, startTestPlatform, uploadArtifact, waitFinal, waitFor } from "./_support.ts";

it("close() resolves only once the compile started by prepare() has finished writing", async () => {
  const dataDir = await mkdtemp(join(tmpdir(), "svc-bytecode-"));
  try {
    const bytecode = new RuntimeBytecode(dataDir);
    bytecode.prepare("python3");
    await bytecode.close();
    const folders = await readdir(join(dataDir, "bytecode"));
    expect(folders).toHaveLength(1);
    expect(folders[0]).not.toContain(".tmp-");
    expect((await readdir(join(dataDir, "bytecode", folders[0]!))).filter((name) => name.endsWith(".pyc")).length).toBeGreaterThan(5);
  } finally {
    await rm(dataDir, { recursive: true });
  }
});

it("a cold worker after the first finds the runtime's .pyc in its build: linked to the platform's one compile, not copied", { timeout: 120_000 }, async () => {
  const p = await startTestPlatform();
  try {
    const { buildId, endpoints } = await deploy(p, await buildFixtureArtifact(), [{ name: "work", workersMax: 1, idleTimeout: 600 }]);
    const work = endpoints.work!.id;
    const echo = async (value: string) => {
      const r = await api(p, "POST", `/v2/${work}/runsync`, { input: { op: "echo", value } });
      return r.body.status === "COMPLETED" ? r.body : waitFinal(p, work, r.body.id, 60_000);
    };
    const dataDir = p.context.options.dataDir;
    expect(await echo("first")).toMatchObject({ status: "COMPLETED" }); // its start compiles the runtime for its interpreter
    const compiled = await waitFor("the runtime's compile", async () => {
      const folders = (await readdir(join(dataDir, "bytecode")).catch(() => [])).filter((name) => !name.includes(".tmp-"));
      return folders.length === 1 ? join(dataDir, "bytecode", folders[0]!) : undefined;
    });
    for (const w of p.context.supervisor.forEndpoint(work)) await p.context.supervisor.stop(w, "the test starts a cold one");
    expect(await echo("second")).toMatchObject({ status: "COMPLETED", output: { echo: "second" } });

    const cache = join(dataDir, "builds", buildId, "svc", "__pycache__");
    const linked = (await readdir(cache)).filter((name) => name.startsWith("worker.") && name.endsWith(".pyc"));
    expect(linked).toHaveLength(1);
    const pyc = await stat(join(cache, linked[0]!));
    const inodes = await Promise.all((await readdir(compiled)).map(async (name) => (await stat(join(compiled, name))).ino));
    expect(inodes).toContain(pyc.ino);
  } finally {
    await p.dispose();
  }
});

/** A hostile function: every way it has at the linked .pyc it shares with other apps' workers, and at the host. */
const TAMPER = `import importlib.util, os
import svc.worker
from svc import Endpoint

PYC = importlib.util.cache_from_source(svc.worker.__file__)


def overwrite():
    with open(PYC, "r+b") as f:
        f.write(b"x")


def replace():
    with open(PYC + ".evil", "wb") as f:
        f.write(b"x")
    os.replace(PYC + ".evil", PYC)


def hostname():
    with open("/proc/sys/kernel/hostname", "w") as f:
        f.write("owned")


@Endpoint(name="tamper", cpu="cpu3c-2-4")
def tamper() -> dict:
    tried = {}
    for name, attempt in {
        "write": overwrite,
        "replace": replace,
        "unlink": lambda: os.unlink(PYC),
        "chmod": lambda: os.chmod(PYC, 0o666),
        "proc/sys": hostname,
    }.items():
        try:
            attempt()
            tried[name] = "done"
        except OSError as error:
            tried[name] = type(error).__name__
    uid = os.getuid()
    with open("/proc/self/uid_map") as f:  # "inside outside count" per line: the uid this process has on the host
        ranges = [tuple(map(int, line.split())) for line in f if line.strip()]
    tried["host_uid"] = next((outside + uid - inside for inside, outside, count in ranges if inside <= uid < inside + count), None)
    tried["pyc"] = os.path.exists(PYC)
    return tried
`;

it("a worker cannot change, replace or remove the linked .pyc it shares with every other app's workers", { timeout: 120_000 }, async (ctx) => {
  if (!(await bwrapUsable())) ctx.skip();
  const p = await startTestPlatform();
  try {
    const artifact = await buildAppArtifact({ "app/__init__.py": "", "app/tamper.py": TAMPER }, [
      { name: "tamper", module: "app.tamper", functions: ["tamper"] },
    ]);
    const { buildId } = await uploadArtifact(p, artifact);
    const { id } = await saveImageEndpoint(p, buildId, { name: "tamper", workersMax: 1 });
    const call = async () => {
      const r = await api(p, "POST", `/v2/${id}/runsync`, { input: {} });
      const out = r.body.status === "COMPLETED" || r.body.status === "FAILED" ? r.body : await waitFinal(p, id, r.body.id, 60_000);
      expect(out.status, JSON.stringify(out).slice(0, 2000)).toBe("COMPLETED");
      return out.output as Record<string, unknown>;
    };
    await call(); // the first worker starts the compile
    const compiled = await waitFor("the runtime's compile", async () => {
      const folders = (await readdir(join(p.dataDir, "bytecode")).catch(() => [])).filter((name) => !name.includes(".tmp-"));
      return folders.length === 1 ? join(p.dataDir, "bytecode", folders[0]!) : undefined;
    });
    const pycs = (await readdir(compiled)).filter((name) => name.endsWith(".pyc")); // beside them, tree/: the runtime a warm spare imports
    const shared = await Promise.all(pycs.map(async (name) => [name, await readFile(join(compiled, name))] as const));
    for (const w of p.context.supervisor.forEndpoint(id)) await p.context.supervisor.stop(w, "the test starts a cold one");

    const tried = await call(); // a cold worker: its build now holds the linked .pyc
    const refused = expect.not.stringMatching(/^done$/);
    expect(tried).toMatchObject({ write: refused, replace: refused, unlink: refused, chmod: refused, "proc/sys": refused, pyc: true });
    expect(tried.host_uid, "the worker's uid on the host").toEqual(expect.any(Number));
    expect(tried.host_uid, "the worker is not root on the host").not.toBe(0);
    const cache = join(p.dataDir, "builds", buildId, "svc", "__pycache__");
    expect((await readdir(cache)).filter((name) => name.startsWith("worker."))).toHaveLength(1);
    for (const [name, bytes] of shared) expect((await readFile(join(compiled, name))).equals(bytes), name).toBe(true);
  } finally {
    await p.dispose();
  }
});
