/**
 * `svc volume` as a user runs it: the real CLI (bin/svc.mjs) against a real embedded platform through
 * PLATFORM_API_URL: create/list/get, folder uploads that send only what changed, a multipart upload
 * killed midway and resumed (only the missing parts sent), ls/download/rm, the credentials in the
 * form the AWS tools read (used by boto3 with nothing else), delete refused while in use.
 */
import { execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, runSvc } from "../_support/cli.ts";
import { ListPartsCommand, ListMultipartUploadsCommand, S3Client } from "@aws-sdk/client-s3";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { startTestPlatform, type TestPlatform } from "../platform/_support.ts";

const MiB = 1024 * 1024;

describe("svc volume", { timeout: 180_000 }, () => {
  let platform: TestPlatform;
  let client: PlatformClient;
  let work: string;
  let env: NodeJS.ProcessEnv;

  const svc = (args: string[], extraEnv: NodeJS.ProcessEnv = {}) =>
    runSvc([...args, "--root", work], { env: { ...env, ...extraEnv }, timeout: 120_000, maxBuffer: 16 * MiB });
  const json = async (args: string[]) => {
    const r = await svc([...args, "--json"]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    return JSON.parse(r.stdout);
  };

  beforeAll(async () => {
    platform = await startTestPlatform();
    client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
    work = await mkdtemp(join(tmpdir(), "svc-volume-cli-"));
    env = { ...process.env, NO_COLOR: "1", CI: "1", PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey };
  });
  afterAll(async () => {
    await platform?.dispose();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("creates, lists and gets volumes; refuses a bad size", async () => {
    const created = await json(["volume", "create", "weights", "--size", "2"]);
    expect(created.volume).toMatchObject({ name: "weights", size: 2, dataCenterId: "local" });
    expect((await json(["volume", "list"])).volumes.map((v: { name: string }) => v.name)).toContain("weights");
    expect((await json(["volume", "get", "weights"])).used).toBe(0);
    const bad = await svc(["volume", "create", "x", "--size", "half"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("--size must be a whole number");
    const missing = await svc(["volume", "get", "nope"]);
    expect(missing.stderr).toContain("[VOLUME_NOT_FOUND]");
    expect(missing.stderr).toContain("svc volume create nope --size");
  });

  it("uploads a folder, then only what changed; ls, download and rm", async () => {
    const src = join(work, "ckpt");
    await mkdir(join(src, "tokenizer"), { recursive: true });
    const big = randomBytes(20 * MiB); // three 8 MiB parts
    await writeFile(join(src, "model.safetensors"), big);
    await writeFile(join(src, "config.json"), '{"dim": 8}');
    await writeFile(join(src, "tokenizer", "vocab.txt"), "a\nb\n");
    const first = await json(["volume", "upload", src, "weights:models/tiny"]);
    expect(first.uploaded.map((r: { key: string; action: string }) => [r.key, r.action])).toEqual([
      ["models/tiny/config.json", "uploaded"],
      ["models/tiny/model.safetensors", "uploaded"],
      ["models/tiny/tokenizer/vocab.txt", "uploaded"],
    ]);
    expect(
      (await readFile(join(platform.dataDir, "volumes", (await client.findVolume("weights"))!.id, "models", "tiny", "model.safetensors"))).equals(big),
    ).toBe(true);

    await writeFile(join(src, "config.json"), '{"dim": 16}');
    const second = await json(["volume", "upload", src, "weights:models/tiny"]);
    expect(second.uploaded.map((r: { action: string }) => r.action)).toEqual(["uploaded", "unchanged", "unchanged"]);
    expect(second.uploaded.reduce((n: number, r: { sentBytes: number }) => n + r.sentBytes, 0)).toBe(11);

    const ls = await svc(["volume", "ls", "weights:models/tiny"]);
    expect(ls.stdout).toMatch(/PRE tokenizer\/$/m);
    expect(ls.stdout).toMatch(/ 20971520 model\.safetensors$/m);

    const out = join(work, "back");
    const down = await json(["volume", "download", "weights:models/tiny", out]);
    expect(down.downloaded).toEqual({ downloaded: 3, unchanged: 0 });
    expect((await readFile(join(out, "model.safetensors"))).equals(big)).toBe(true);
    expect(await readFile(join(out, "tokenizer", "vocab.txt"), "utf8")).toBe("a\nb\n");
    expect((await json(["volume", "download", "weights:models/tiny", out])).downloaded).toEqual({ downloaded: 0, unchanged: 3 });

    const folder = await svc(["volume", "rm", "weights:models/tiny/tokenizer"]);
    expect(folder.stderr).toContain("--recursive");
    expect((await json(["volume", "rm", "weights:models/tiny/tokenizer", "--recursive"])).removed).toEqual(["models/tiny/tokenizer/vocab.txt"]);
    expect((await json(["volume", "rm", "weights:models/tiny/config.json"])).removed).toEqual(["models/tiny/config.json"]);
    expect((await json(["volume", "ls", "weights:models/tiny"])).objects.map((o: { key: string }) => o.key)).toEqual(["models/tiny/model.safetensors"]);
  });

  it("resumes an upload killed midway: the parts already on the volume are not sent again", async () => {
    const file = join(work, "resume.bin");
    const bytes = randomBytes(128 * MiB); // sixteen 8 MiB parts: room to stop it midway on a fast machine
    await writeFile(file, bytes);
    const volume = (await client.findVolume("weights"))!;
    const staging = join(platform.dataDir, "volume-staging");
    const child = spawn(process.execPath, [BIN, "volume", "upload", file, "weights:big/resume.bin", "--root", work], { env, stdio: "ignore" });
    // Kill it once the platform holds two whole parts (a condition, not a delay).
    let done = false;
    child.once("exit", () => (done = true));
    for (let i = 0; i < 6000 && !done; i++) {
      const uploads = (await readdir(staging)).filter((d) => d.startsWith("mpu_"));
      const parts = uploads.length ? (await readdir(join(staging, uploads[0]!))).filter((n) => n.endsWith(".json")).length : 0;
      if (parts >= 2) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    child.kill("SIGKILL");
    await new Promise((r) => (done ? r(undefined) : child.once("exit", r)));

    const creds = await client.s3Access();
    const s3 = new S3Client({ endpoint: creds.endpointUrl, forcePathStyle: true, region: "local", credentials: creds });
    const [upload] = (await s3.send(new ListMultipartUploadsCommand({ Bucket: volume.id }))).Uploads ?? [];
    expect(upload?.Key).toBe("big/resume.bin");
    const there = (await s3.send(new ListPartsCommand({ Bucket: volume.id, Key: "big/resume.bin", UploadId: upload!.UploadId }))).Parts ?? [];
    const thereBytes = there.reduce((n, p) => n + (p.Size ?? 0), 0);
    expect(there.length).toBeGreaterThanOrEqual(2);
    expect(there.length).toBeLessThan(16);

    const resumed = await json(["volume", "upload", file, "weights:big/resume.bin"]);
    // A part the killed CLI had already written to its socket may still land after the listing above:
    // the resume reuses at least what was listed, in whole parts, and sends exactly the rest.
    const [result] = resumed.uploaded;
    expect(result).toMatchObject({ key: "big/resume.bin", size: bytes.length, action: "resumed" });
    expect(result.reusedBytes).toBeGreaterThanOrEqual(thereBytes);
    expect(result.reusedBytes % (8 * MiB)).toBe(0);
    expect(result.reusedBytes).toBeLessThan(bytes.length);
    expect(result.sentBytes).toBe(bytes.length - result.reusedBytes);
    const got = await json(["volume", "download", "weights:big/resume.bin", join(work, "resume.back")]);
    expect(got.downloaded.downloaded).toBe(1);
    expect((await readFile(join(work, "resume.back"))).equals(bytes)).toBe(true);
  });

  it("prints credentials the AWS tools read: boto3 lists the volume with them and nothing else", async () => {
    const r = await svc(["volume", "credentials", "weights"]);
    expect(r.code, r.stderr).toBe(0);
    const vars = Object.fromEntries([...r.stdout.matchAll(/^export (\w+)='([^']*)'$/gm)].map((m) => [m[1]!, m[2]!]));
    expect(Object.keys(vars).sort()).toEqual(["AWS_ACCESS_KEY_ID", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_SECRET_ACCESS_KEY", "SVC_VOLUME_BUCKET"]);
    const script =
      "import boto3,os\nfrom botocore.config import Config\ns3=boto3.client('s3',config=Config(s3={'addressing_style':'path'}))\nprint(sorted(o['Key'] for o in s3.list_objects_v2(Bucket=os.environ['SVC_VOLUME_BUCKET'])['Contents']))";
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("AWS_") && !k.startsWith("PLATFORM_")));
    const out = await new Promise<string>((resolve, reject) =>
      execFile("python3", ["-c", script], { env: { ...clean, ...vars, HOME: work }, timeout: 60_000 }, (e, so, se) =>
        e ? reject(new Error(se)) : resolve(so),
      ),
    );
    expect(out.trim()).toBe("['big/resume.bin', 'models/tiny/model.safetensors']");
  });

  it("stops an upload past the volume's size with the S3 error and the catalogue code", async () => {
    const small = (await json(["volume", "create", "small", "--size", "1"])).volume;
    const { open, truncate } = await import("node:fs/promises");
    const filler = join(platform.dataDir, "volumes", small.id, "filler");
    await (await open(filler, "w")).close();
    await truncate(filler, 1_000_000_000 - 4 * MiB); // sparse: 4 MiB left
    const file = join(work, "too-big.bin");
    await writeFile(file, randomBytes(6 * MiB));
    const r = await svc(["volume", "upload", file, "small"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("[VOLUME_TRANSFER_FAILED]");
    expect(r.stderr).toContain("EntityTooLarge");
    expect(r.stderr).toContain("volume small's size of 1 GB");
    expect((await json(["volume", "ls", "small"])).objects.map((o: { key: string }) => o.key)).toEqual(["filler"]);
  });

  it("refuses to delete a volume an endpoint uses unless --force", async () => {
    const volume = (await client.findVolume("weights"))!;
    await client.saveEndpoint({ name: "uses-weights", networkVolumeId: volume.id } as never);
    const refused = await svc(["volume", "delete", "weights", "--yes"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("uses-weights");
    expect(refused.stderr).toContain("--force");
    expect((await json(["volume", "delete", "weights", "--yes", "--force"])).deleted.name).toBe("weights");
    expect(await client.findVolume("weights")).toBeNull();
  });
});
