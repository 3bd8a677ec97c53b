/**
 * The runtime's bytecode (platform/workers/backends/runtime-bytecode.ts): compiled once per
 * interpreter into the platform's state folder, in the background (the platform's close waits for it
 * through `close`, else removing that folder right after a close races the compile: ENOTEMPTY, seen
 * in CI), and linked into the builds workers start from.
 */
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { RuntimeBytecode } from "../../platform/workers/backends/runtime-bytecode.ts";
import { api, buildFixtureArtifact, deploy, startTestPlatform, waitFinal, waitFor } from "./_support.ts";

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
