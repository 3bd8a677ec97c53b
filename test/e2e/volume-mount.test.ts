/**
 * `@Endpoint(..., volume=...)` end to end with the real CLI and a real embedded platform: a deploy
 * naming a volume the platform lacks fails before the build with VOLUME_NOT_FOUND and the remedy;
 * once it exists, the deploy resolves the name to its id (manifest and listing show it), the
 * endpoint's worker reads what the S3 API wrote and writes what the S3 API reads back, at
 * /platform-volume (in the sandbox) — and an endpoint without the volume sees none. `svc run` (the
 * dev server) gives its live- endpoint the same volume. As root with a loop device the volume is an
 * ext4 image of its size: a worker writing past it through the mount meets ENOSPC, and a resize
 * grows it in place so that the same write then fits.
 */
import { cp, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSvc } from "../_support/cli.ts";
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import { startDevServer } from "../../dev/index.ts";
import { gqlOk, startTestPlatform, type TestPlatform } from "../platform/_support.ts";
import { diskSupport } from "../../platform/volumes/volume-disk.ts";

const FIXTURE = new URL("../../fixtures/volume-app/", import.meta.url).pathname;

describe("endpoints with a network volume", { timeout: 180_000 }, () => {
  let platform: TestPlatform;
  let client: PlatformClient;
  let root: string;
  let env: NodeJS.ProcessEnv;
  const svc = (args: string[]) => runSvc([...args, "--root", root], { env, timeout: 150_000 });

  beforeAll(async () => {
    platform = await startTestPlatform();
    client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
    root = await mkdtemp(join(tmpdir(), "svc-volume-app-"));
    await cp(FIXTURE, root, { recursive: true });
    env = { ...process.env, NO_COLOR: "1", PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey };
  });
  afterAll(async () => {
    await platform?.dispose();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("fails the deploy before the build when the volume does not exist", async () => {
    const r = await svc(["deploy"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("[VOLUME_NOT_FOUND]");
    expect(r.stderr).toContain('endpoint "keeper" declares volume="shared-data"');
    expect(r.stderr).toContain("svc volume create shared-data --size <GB>");
    expect(await stat(join(root, ".svc", "artifact.tar.gz")).catch(() => "no artifact")).toBe("no artifact");
  });

  it("mounts the volume read-write at /platform-volume in that endpoint's workers only", async () => {
    const volume = await client.createVolume({ name: "shared-data", size: 1 });
    const creds = await client.s3Access();
    const s3 = new S3Client({ endpoint: creds.endpointUrl, forcePathStyle: true, region: volume.dataCenterId, credentials: creds });
    await s3.send(new PutObjectCommand({ Bucket: volume.id, Key: "inbox/hello.txt", Body: "written over S3" }));

    const deployed = await svc(["deploy"]);
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(deployed.stdout).toContain("(volume shared-data at /platform-volume)");
    const manifest = JSON.parse(await readFile(join(root, ".svc", "svc_manifest.json"), "utf8"));
    expect(manifest.endpoints.keeper.volume).toBe("shared-data");
    expect(manifest.endpoints.outsider.volume).toBeUndefined();
    const endpoints = (await client.getApp("volume-app"))!.environments[0]!.endpoints;
    const keeper = endpoints.find((e) => e.name === "keeper")!;
    const outsider = endpoints.find((e) => e.name === "outsider")!;
    expect(keeper.networkVolumeId).toBe(volume.id);
    expect(outsider.networkVolumeId || null).toBeNull();

    const job = await client.runsync(keeper.id, { text: "written by the worker" });
    expect(job.error).toBeUndefined();
    expect(job.output).toMatchObject({ seen: "written over S3" });
    const back = await s3.send(new GetObjectCommand({ Bucket: volume.id, Key: "outbox/reply.txt" }));
    expect(await back.Body!.transformToString()).toBe("written by the worker");

    const sandboxed = (job.output as { volume: string }).volume === "/platform-volume";
    const other = await client.runsync(outsider.id, {});
    expect(other.output).toEqual({ mounted: false, env: null });
    // Which of the two the machine gave (bwrap or flags mode), for the reader of the log.
    console.log(`worker saw the volume at ${(job.output as { volume: string }).volume} (${sandboxed ? "bwrap" : "flags mode"})`);
  });

  it.skipIf(!diskSupport().ok)("holds the volume's size for a worker writing through the mount, and grows it in place", async () => {
    const filler = (await client.getApp("volume-app"))!.environments[0]!.endpoints.find((e) => e.name === "filler")!;
    const GB = 1e9; // a volume's size is in decimal GB (docs/volumes.md)
    const first = await client.runsync(filler.id, { name: "big.bin", mb: 1100 }, { timeoutMs: 120_000 });
    expect(first.output, JSON.stringify(first)).toMatchObject({ stopped_by: "ENOSPC" });
    expect((first.output as { written: number }).written).toBeLessThan(GB);
    const got = await svc(["volume", "get", "shared-data", "--json"]);
    expect(got.code, got.stderr).toBe(0);
    const { used, volume } = JSON.parse(got.stdout) as { used: number; volume: { id: string; size: number } };
    expect(used).toBeGreaterThan(0.9 * GB); // what the worker wrote before the size stopped it
    expect(used).toBeLessThanOrEqual(volume.size * GB);
    console.log(`a 1 GB volume took ${used} bytes through the mount before ENOSPC`);

    await gqlOk(platform, "mutation($input: UpdateNetworkVolumeInput!) { updateNetworkVolume(input: $input) { id size } }", {
      input: { id: volume.id, size: 2 },
    });
    const again = await client.runsync(filler.id, { name: "big.bin", mb: 1100 }, { timeoutMs: 120_000 });
    expect(again.output, JSON.stringify(again)).toEqual({ written: 1100 * 1024 * 1024, stopped_by: null });
    expect((await svc(["volume", "rm", "shared-data:big.bin"])).code).toBe(0); // the image's blocks stay, but the host's disk is not read again
  });

  it("svc run: the live- endpoint gets the same volume", async () => {
    const server = await startDevServer({ root, client, port: 0, logger: createLogger("silent"), reload: false });
    try {
      const res = await fetch(`${server.url}/store/keep/runsync`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ input: { text: "from svc run" } }),
      });
      const job = (await res.json()) as { status: string; output: { seen: string } };
      expect(job).toMatchObject({ status: "COMPLETED", output: { seen: "written over S3" } });
      const volume = (await client.findVolume("shared-data"))!;
      const live = (await client.listEndpoints()).find((e) => e.name === "live-keeper");
      expect(live?.networkVolumeId).toBe(volume.id);
      expect(await readFile(join(platform.dataDir, "volumes", volume.id, "outbox", "reply.txt"), "utf8")).toBe("from svc run");
    } finally {
      await server.close();
    }
  });
});
