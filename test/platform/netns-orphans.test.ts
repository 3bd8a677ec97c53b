/**
 * A platform killed with -9 leaves nothing running behind it on the network side: each worker
 * namespace's slirp4netns exits with the platform (--exit-fd), and the next platform's first check
 * removes the dead one's `svc-<pid>-…` namespaces (root and slirp4netns, as CI has them).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { egressAvailable, removeOrphanNetns } from "../../platform/workers/sandbox-egress.ts";

const MODULE = new URL("../../platform/workers/sandbox-egress.ts", import.meta.url).pathname;
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z"); // a zombie has exited
  } catch {
    return false;
  }
};

describe.runIf(process.platform === "linux" && process.getuid?.() === 0)("network namespaces of a dead platform", () => {
  it("slirp4netns exits with a platform killed -9, and the next platform removes its namespace", async () => {
    if (!(await egressAvailable())) return expect.fail("slirp4netns is not installed: scripts/setup.sh installs it");
    // a stand-in platform process: makes one worker namespace with egress, says its name and slirp's pid, then waits
    const script = `import { createNetns } from ${JSON.stringify(MODULE)}; const n = await createNetns(process.pid + "-orphan-0", true); console.log(n.name, n.slirp.pid); setInterval(() => {}, 1000);`;
    const dir = mkdtempSync(join(tmpdir(), "svc-orphan-"));
    writeFileSync(join(dir, "platform.mts"), script);
    const child = spawn(process.execPath, ["--import", "tsx", join(dir, "platform.mts")], { stdio: ["ignore", "pipe", "inherit"] });
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout!.once("data", (d: Buffer) => resolve(String(d).trim()));
      child.once("exit", (code) => reject(new Error(`the stand-in platform exited ${code}`)));
    });
    const [name, slirpPid] = [line.split(" ")[0]!, Number(line.split(" ")[1])];
    expect(existsSync(`/run/netns/${name}`)).toBe(true);
    expect(alive(slirpPid)).toBe(true);

    child.kill("SIGKILL");
    const deadline = Date.now() + 5_000;
    while (alive(slirpPid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(alive(slirpPid)).toBe(false);

    await removeOrphanNetns();
    expect(existsSync(`/run/netns/${name}`)).toBe(false);
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);
});
