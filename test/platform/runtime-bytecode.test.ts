/**
 * The runtime's bytecode compile (platform/workers/backends/runtime-bytecode.ts) writes into the
 * platform's state folder in the background; the platform's close waits for it through `settled`,
 * else removing that folder right after a close races the compile (ENOTEMPTY, seen in CI).
 */
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { RuntimeBytecode } from "../../platform/workers/backends/runtime-bytecode.ts";

it("settled() resolves only once the compile started by prepare() has finished writing", async () => {
  const dataDir = await mkdtemp(join(tmpdir(), "svc-bytecode-"));
  try {
    const bytecode = new RuntimeBytecode(dataDir);
    bytecode.prepare("python3");
    await bytecode.settled();
    const folders = await readdir(join(dataDir, "bytecode"));
    expect(folders).toHaveLength(1);
    expect(folders[0]).not.toContain(".tmp-");
    expect((await readdir(join(dataDir, "bytecode", folders[0]!))).filter((name) => name.endsWith(".pyc")).length).toBeGreaterThan(5);
  } finally {
    await rm(dataDir, { recursive: true });
  }
});
