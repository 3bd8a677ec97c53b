/**
 * A volume's ext4 image lives as long as the volume, its mount as long as the platform: closing the
 * platform leaves no mount or loop device behind, a restart on the same state mounts it again with its
 * files, and deleting the volume removes the image. Runs where images can be had (root, a loop device).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { createPlatformClient } from "../../core/client/index.ts";
import { diskImage, diskSupport } from "../../platform/volumes/volume-disk.ts";
import { startTestPlatform, tempDir, type TestPlatform } from "./_support.ts";

const mountedAt = (dir: string) =>
  readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .some((line) => line.split(" ")[4] === dir);
const loopsOf = (image: string) => execFileSync("losetup", ["-j", image], { encoding: "utf8" }).trim();

describe.skipIf(!diskSupport().ok)("a volume's image across platform restarts", { timeout: 60_000 }, () => {
  let dataDir: string;
  let platform: TestPlatform | undefined;
  afterAll(async () => {
    await platform?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("unmounts at close, mounts again with its files at start, and goes with the volume", async () => {
    dataDir = await tempDir();
    platform = await startTestPlatform({ dataDir });
    let client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
    const volume = await client.createVolume({ name: "kept", size: 1 });
    const dir = join(dataDir, "volumes", volume.id);
    const image = diskImage(dataDir, volume.id);
    expect(mountedAt(dir)).toBe(true);
    const s3 = async () => {
      const creds = await client.s3Access();
      return new S3Client({ endpoint: creds.endpointUrl, forcePathStyle: true, region: volume.dataCenterId, credentials: creds });
    };
    await (await s3()).send(new PutObjectCommand({ Bucket: volume.id, Key: "a/b.txt", Body: "still here" }));

    await platform.close();
    platform = undefined;
    expect(mountedAt(dir)).toBe(false);
    expect(loopsOf(image)).toBe("");

    platform = await startTestPlatform({ dataDir });
    client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
    expect(mountedAt(dir)).toBe(true);
    const got = await (await s3()).send(new GetObjectCommand({ Bucket: volume.id, Key: "a/b.txt" }));
    expect(await got.Body!.transformToString()).toBe("still here");

    expect(await client.deleteVolume(volume.id)).toBeTruthy();
    expect(mountedAt(dir)).toBe(false);
    expect(existsSync(image)).toBe(false);
    expect(loopsOf(image)).toBe("");
  });
});
