/**
 * A build uploaded to a platform whose workers run here is unpacked at once, before any endpoint runs
 * it (platform/workers/backends/local.ts, `prepare`): a deploy's or a dev reload's first worker finds
 * it done instead of starting it once its endpoint has moved. The platform's close waits for an unpack
 * under way, which writes into the state folder.
 */
import { existsSync } from "node:fs";
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { startPlatform } from "../../platform/index.ts";
import { buildFixtureArtifact, startTestPlatform, tempDir, uploadArtifact, waitFor } from "./_support.ts";

it("unpacks an uploaded build before any endpoint uses it", async () => {
  const p = await startTestPlatform();
  try {
    const { buildId } = await uploadArtifact(p, await buildFixtureArtifact());
    expect(p.context.store.endpoints.list()).toHaveLength(0);
    const dir = join(p.context.options.dataDir, "builds", buildId);
    await waitFor("the build unpacked", () => existsSync(join(dir, "svc_manifest.json")) || undefined, 10_000);
  } finally {
    await p.dispose();
  }
});

it("close() resolves once an unpack started by an upload has finished writing", async () => {
  const dataDir = await tempDir();
  const p = await startPlatform({ port: 0, dataDir, log: () => {} });
  try {
    const { buildId } = await uploadArtifact(p, await buildFixtureArtifact());
    await p.close();
    const builds = await readdir(join(dataDir, "builds"));
    expect(builds.filter((name) => name.includes(".tmp-"))).toEqual([]);
    expect(existsSync(join(dataDir, "builds", buildId, "svc_manifest.json"))).toBe(true);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});
