/**
 * Network volumes on the embedded platform: the GraphQL mutations and the S3-compatible API, checked
 * with two independent clients (the AWS SDK for JavaScript v3 and boto3 from PyPI).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import {
  S3Client,
  PutObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  DeleteObjectCommand,
  CreateMultipartUploadCommand,
  UploadPartCommand,
  CompleteMultipartUploadCommand,
  AbortMultipartUploadCommand,
  ListPartsCommand,
  ListMultipartUploadsCommand,
} from "@aws-sdk/client-s3";
import { sweepUploads, UPLOAD_RETENTION_MS } from "../../platform/volumes/multipart.ts";
import { gql, startTestPlatform, tempDir, type TestPlatform } from "./_support.ts";

const MiB = 1024 * 1024;
let p: TestPlatform;
let creds: { endpointUrl: string; accessKeyId: string; secretAccessKey: string };
let s3: S3Client;

const client = (secret = creds.secretAccessKey, accessKeyId = creds.accessKeyId) =>
  new S3Client({ endpoint: creds.endpointUrl, forcePathStyle: true, region: "local", credentials: { accessKeyId, secretAccessKey: secret }, maxAttempts: 1 });

async function createVolume(name: string, size = 1): Promise<string> {
  const r = await gql(p, `mutation ($i: CreateNetworkVolumeInput!) { createNetworkVolume(input: $i) { id name size dataCenterId } }`, { i: { name, size } });
  expect(r.errors).toBeUndefined();
  return r.data!.createNetworkVolume.id;
}

const errorName = (promise: Promise<unknown>) =>
  promise.then(
    () => "no error",
    (e: Error) => e.name,
  );

beforeAll(async () => {
  p = await startTestPlatform();
  creds = (await gql(p, `{ s3Credentials { endpointUrl accessKeyId secretAccessKey } }`)).data!.s3Credentials;
  s3 = client();
});
afterAll(async () => p?.dispose());

describe("network volumes over GraphQL", () => {
  it("lists created volumes under myself, refuses a duplicate name, deletes", async () => {
    const id = await createVolume("listed", 5);
    const list = await gql(p, `{ myself { networkVolumes { id name size dataCenterId } } }`);
    expect(list.data!.myself.networkVolumes).toContainEqual({ id, name: "listed", size: 5, dataCenterId: "local" });
    const dup = await gql(p, `mutation { createNetworkVolume(input: {name: "listed", size: 1}) { id } }`);
    expect(dup.errors?.[0]?.extensions?.code).toBe("VOLUME_EXISTS");
    expect((await gql(p, `mutation { deleteNetworkVolume(input: {id: "${id}"}) }`)).data!.deleteNetworkVolume).toBe(true);
    const after = await gql(p, `{ myself { networkVolumes { id } } }`);
    expect(after.data!.myself.networkVolumes.map((v: { id: string }) => v.id)).not.toContain(id);
  });

  it("keeps the S3 secret and the volume mutations from a worker's key", async () => {
    const ep = await gql(p, `mutation { saveEndpoint(input: {name: "scoped"}) { id } }`);
    const workerKey = p.context.workerKeys.keyFor(p.context.store.endpoints.get(ep.data!.saveEndpoint.id)!);
    const asWorker = { url: p.url, apiKey: workerKey };
    for (const query of [
      `{ s3Credentials { secretAccessKey } }`,
      `{ myself { networkVolumes { id } } }`,
      `mutation { createNetworkVolume(input: {name: "w", size: 1}) { id } }`,
    ]) {
      const r = await gql(asWorker, query);
      expect(r.status).toBe(403);
      expect(r.errors?.[0]?.extensions?.code).toBe("KEY_SCOPE");
    }
  });

  it("keeps an endpoint's networkVolumeId, refuses an unknown one, and refuses deleting a volume in use unless forced", async () => {
    const id = await createVolume("attached");
    const unknown = await gql(p, `mutation { saveEndpoint(input: {name: "e0", networkVolumeId: "vol_nope"}) { id } }`);
    expect(unknown.errors?.[0]?.extensions?.code).toBe("VOLUME_NOT_FOUND");
    const ep = await gql(p, `mutation { saveEndpoint(input: {name: "e1", networkVolumeId: "${id}"}) { id networkVolumeId networkVolume { id name } } }`);
    expect(ep.data!.saveEndpoint).toMatchObject({ networkVolumeId: id, networkVolume: { id, name: "attached" } });
    const refused = await gql(p, `mutation { deleteNetworkVolume(input: {id: "${id}"}) }`);
    expect(refused.errors?.[0]?.extensions?.code).toBe("VOLUME_IN_USE");
    expect(refused.errors?.[0]?.message).toContain("e1");
    const forced = await gql(p, `mutation { deleteNetworkVolume(input: {id: "${id}", force: true}) }`);
    expect(forced.data!.deleteNetworkVolume).toBe(true);
    const detached = await gql(p, `{ endpoint(id: "${ep.data!.saveEndpoint.id}") { networkVolumeId } }`);
    expect(detached.data!.endpoint.networkVolumeId).toBeNull();
  });
});

describe("the S3 API with the AWS SDK for JavaScript v3", () => {
  let bucket: string;
  beforeAll(async () => {
    bucket = await createVolume("sdk");
  });

  it("puts (buffer and stream), gets whole and by range, heads, and the bytes land in the volume's folder", async () => {
    const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "a/b c.txt", Body: "hello volume" }));
    expect(put.ChecksumCRC32).toBeDefined(); // the SDK sent a CRC32 and the server checked it
    const streamed = Buffer.alloc(200_000, 7);
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "a/stream.bin", Body: Readable.from([streamed]), ContentLength: streamed.length }));
    expect(await readFile(join(p.dataDir, "volumes", bucket, "a", "b c.txt"), "utf8")).toBe("hello volume");
    expect((await readFile(join(p.dataDir, "volumes", bucket, "a", "stream.bin"))).equals(streamed)).toBe(true);
    const whole = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "a/b c.txt" }));
    expect(await whole.Body!.transformToString()).toBe("hello volume");
    const part = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "a/b c.txt", Range: "bytes=6-11" }));
    expect(await part.Body!.transformToString()).toBe("volume");
    expect(part.ContentRange).toBe("bytes 6-11/12");
    const suffix = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "a/b c.txt", Range: "bytes=-3" }));
    expect(await suffix.Body!.transformToString()).toBe("ume");
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "a/stream.bin" }));
    expect(head.ContentLength).toBe(streamed.length);
    expect(await errorName(s3.send(new GetObjectCommand({ Bucket: bucket, Key: "a/b c.txt", Range: "bytes=50-60" })))).toBe("InvalidRange");
  });

  it("lists with prefix, delimiter and continuation tokens", async () => {
    for (const k of ["l/1", "l/2", "l/3", "l/sub/4", "l/sub/5", "l/z/6"]) await s3.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: k }));
    const top = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "l/", Delimiter: "/" }));
    expect(top.Contents?.map((c) => c.Key)).toEqual(["l/1", "l/2", "l/3"]);
    expect(top.CommonPrefixes?.map((c) => c.Prefix)).toEqual(["l/sub/", "l/z/"]);
    const keys: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "l/", MaxKeys: 2, ContinuationToken: token }));
      keys.push(...(page.Contents ?? []).map((c) => c.Key!));
      token = page.NextContinuationToken;
      pages++;
    } while (token && pages < 10);
    expect(keys).toEqual(["l/1", "l/2", "l/3", "l/sub/4", "l/sub/5", "l/z/6"]);
    expect(pages).toBe(3);
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "l/sub/4" }));
    expect(await errorName(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "l/sub/4" })))).toBe("NotFound");
  });

  it("uploads in parts: ListParts shows what arrived, complete joins them, abort forgets an upload", async () => {
    const a = Buffer.alloc(5 * MiB, 1);
    const b = Buffer.from("tail of the object");
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: "m/big.bin", ChecksumAlgorithm: "CRC32" }));
    const p1 = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: "m/big.bin", UploadId, PartNumber: 1, Body: a }));
    const p2 = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: "m/big.bin", UploadId, PartNumber: 2, Body: b }));
    const listed = await s3.send(new ListPartsCommand({ Bucket: bucket, Key: "m/big.bin", UploadId }));
    expect(listed.Parts?.map((x) => [x.PartNumber, x.Size, x.ETag, x.ChecksumCRC32])).toEqual([
      [1, a.length, p1.ETag, p1.ChecksumCRC32],
      [2, b.length, p2.ETag, p2.ChecksumCRC32],
    ]);
    const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    expect(uploads.Uploads?.map((u) => u.UploadId)).toContain(UploadId);
    const wrong = s3.send(
      new CompleteMultipartUploadCommand({ Bucket: bucket, Key: "m/big.bin", UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p2.ETag }] } }),
    );
    expect(await errorName(wrong)).toBe("InvalidPart");
    const done = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: "m/big.bin",
        UploadId,
        MultipartUpload: {
          Parts: [
            { PartNumber: 1, ETag: p1.ETag, ChecksumCRC32: p1.ChecksumCRC32 },
            { PartNumber: 2, ETag: p2.ETag, ChecksumCRC32: p2.ChecksumCRC32 },
          ],
        },
      }),
    );
    expect(done.ETag).toMatch(/-2"$/);
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "m/big.bin" }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(Buffer.concat([a, b]))).toBe(true);

    const other = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: "m/other.bin" }));
    await s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: "m/other.bin", UploadId: other.UploadId }));
    expect(await errorName(s3.send(new ListPartsCommand({ Bucket: bucket, Key: "m/other.bin", UploadId: other.UploadId })))).toBe("NoSuchUpload");
  });

  it("drops an unfinished upload a week after it began, with its parts", async () => {
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: "m/abandoned.bin" }));
    await s3.send(new UploadPartCommand({ Bucket: bucket, Key: "m/abandoned.bin", UploadId, PartNumber: 1, Body: Buffer.alloc(1000, 1) }));
    expect(await sweepUploads(p.context, Date.now() + UPLOAD_RETENTION_MS - 60_000)).toBe(0);
    expect(await sweepUploads(p.context, Date.now() + UPLOAD_RETENTION_MS + 60_000)).toBeGreaterThanOrEqual(1);
    expect(await errorName(s3.send(new ListPartsCommand({ Bucket: bucket, Key: "m/abandoned.bin", UploadId })))).toBe("NoSuchUpload");
    const { readdir } = await import("node:fs/promises");
    expect(await readdir(join(p.dataDir, "volume-staging", UploadId!)).catch(() => "gone")).toBe("gone");
  });

  it("answers the errors a client understands: NoSuchKey, NoSuchBucket, InvalidAccessKeyId, SignatureDoesNotMatch", async () => {
    expect(await errorName(s3.send(new GetObjectCommand({ Bucket: bucket, Key: "missing" })))).toBe("NoSuchKey");
    expect(await errorName(s3.send(new ListObjectsV2Command({ Bucket: "vol_none" })))).toBe("NoSuchBucket");
    expect(await errorName(client(creds.secretAccessKey, "SVCNOTAKEY").send(new GetObjectCommand({ Bucket: bucket, Key: "a/b c.txt" })))).toBe(
      "InvalidAccessKeyId",
    );
    expect(await errorName(client("wrong-secret").send(new GetObjectCommand({ Bucket: bucket, Key: "a/b c.txt" })))).toBe("SignatureDoesNotMatch");
    // the API key is not an S3 secret
    expect(await errorName(client(p.apiKey).send(new GetObjectCommand({ Bucket: bucket, Key: "a/b c.txt" })))).toBe("SignatureDoesNotMatch");
  });

  it("refuses a write past the volume's size with EntityTooLarge, in one put and in parts", async () => {
    const small = await createVolume("tiny", 1);
    const dir = join(p.dataDir, "volumes", small);
    // Fill the 1 GB volume to 8 MiB short of full with a sparse file (no real disk used).
    const { truncate, open } = await import("node:fs/promises");
    await (await open(join(dir, "filler"), "w")).close();
    await truncate(join(dir, "filler"), 1_000_000_000 - 8 * MiB);
    const over = Buffer.alloc(9 * MiB, 1);
    expect(await errorName(s3.send(new PutObjectCommand({ Bucket: small, Key: "over.bin", Body: over })))).toBe("EntityTooLarge");
    await s3.send(new PutObjectCommand({ Bucket: small, Key: "fits.bin", Body: Buffer.alloc(5 * MiB, 1) }));
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: small, Key: "parts.bin" }));
    expect(await errorName(s3.send(new UploadPartCommand({ Bucket: small, Key: "parts.bin", UploadId, PartNumber: 1, Body: Buffer.alloc(4 * MiB, 2) })))).toBe(
      "EntityTooLarge",
    );
    const listing = await s3.send(new ListObjectsV2Command({ Bucket: small }));
    expect(listing.Contents?.map((c) => c.Key).sort()).toEqual(["filler", "fits.bin"]);
  });

  it("keeps keys inside the volume: '..' segments are refused and a symlink out of it is not followed", async () => {
    const outside = await tempDir("svc-volume-outside-");
    await writeFile(join(outside, "secret.txt"), "not yours");
    const dir = join(p.dataDir, "volumes", bucket);
    await mkdir(join(dir, "links"), { recursive: true });
    await symlink(outside, join(dir, "links", "out"));
    await symlink(join(outside, "secret.txt"), join(dir, "links", "secret.txt"));
    expect(await errorName(s3.send(new GetObjectCommand({ Bucket: bucket, Key: "links/out/secret.txt" })))).toBe("AccessDenied");
    expect(await errorName(s3.send(new GetObjectCommand({ Bucket: bucket, Key: "links/secret.txt" })))).toBe("NoSuchKey");
    expect(await errorName(s3.send(new PutObjectCommand({ Bucket: bucket, Key: "links/out/planted.txt", Body: "x" })))).toBe("AccessDenied");
    expect(await errorName(s3.send(new PutObjectCommand({ Bucket: bucket, Key: "a/../../escape.txt", Body: "x" })))).toBe("InvalidArgument");
    const { readdir } = await import("node:fs/promises");
    expect((await readdir(outside)).sort()).toEqual(["secret.txt"]);
  });
});

describe("the S3 API with boto3 (PyPI)", () => {
  it("round-trips objects, ranges, a multipart upload, presigned URLs, listings and deletes", async () => {
    const bucket = await createVolume("boto");
    const script = new URL("./_boto3_roundtrip.py", import.meta.url).pathname;
    const out = await new Promise<string>((resolve, reject) =>
      execFile("python3", [script, creds.endpointUrl, creds.accessKeyId, creds.secretAccessKey, bucket], { timeout: 60_000 }, (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
      ),
    );
    const seen = JSON.parse(out);
    expect(seen).toMatchObject({
      location: "local",
      get: "from boto3",
      range: "boto3",
      big_same: true,
      presigned: "from boto3",
      tampered: 403,
      prefixes: ["py/"],
      keys: ["py/big.bin", "py/hello world+.txt"],
      deleted: "NoSuchKey",
    });
    expect(seen.big_etag).toMatch(/^"[0-9a-f]{32}-\d+"$/);
  });
});
