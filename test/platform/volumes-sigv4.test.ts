/**
 * SigV4 as the volumes' S3 API checks it, against AWS's own published examples (S3 API reference,
 * "Signature Calculations for the Authorization Header": GET Object, and the chunked PUT Object of
 * 66,560 bytes of "a" whose seed and three chunk signatures are given), then a signed-chunk upload
 * (STREAMING-AWS4-HMAC-SHA256-PAYLOAD, which neither the AWS SDK v3 nor boto3 sends by default)
 * through a real platform: accepted whole, refused when one chunk's bytes change.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash, createHmac } from "node:crypto";
import { request } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { chunkSignature, signingKey, stringToSign, verify, type SignedRequest } from "../../platform/volumes/sigv4.ts";
import { gql, startTestPlatform, type TestPlatform } from "./_support.ts";

const SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const AWS_EXAMPLE_TIME = Date.UTC(2013, 4, 24);
const headers = (o: Record<string, string>) => new Map(Object.entries(o).map(([k, v]) => [k, [v]]));
const sha256 = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
const CREDENTIAL = "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request";

describe("SigV4 against AWS's published examples", () => {
  it("GET Object (Range, empty payload)", () => {
    const req: SignedRequest = {
      method: "GET",
      rawPath: "/test.txt",
      rawQuery: "",
      headers: headers({
        host: "examplebucket.s3.amazonaws.com",
        range: "bytes=0-9",
        "x-amz-content-sha256": sha256(""),
        "x-amz-date": "20130524T000000Z",
        authorization: `AWS4-HMAC-SHA256 ${CREDENTIAL},SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41`,
      }),
    };
    expect(verify(req, () => SECRET, AWS_EXAMPLE_TIME).accessKeyId).toBe("AKIAIOSFODNN7EXAMPLE");
    expect(() => verify(req, () => `${SECRET}x`, AWS_EXAMPLE_TIME)).toThrow(expect.objectContaining({ code: "SignatureDoesNotMatch" }));
    expect(() => verify(req, () => undefined, AWS_EXAMPLE_TIME)).toThrow(expect.objectContaining({ code: "InvalidAccessKeyId" }));
    expect(() => verify(req, () => SECRET, AWS_EXAMPLE_TIME + 3600_000)).toThrow(expect.objectContaining({ code: "RequestTimeTooSkewed" }));
  });

  it("PUT Object in signed chunks: the seed signature and each chunk's, chained", () => {
    const seed = verify(
      {
        method: "PUT",
        rawPath: "/examplebucket/chunkObject.txt",
        rawQuery: "",
        headers: headers({
          "content-encoding": "aws-chunked",
          "content-length": "66824",
          host: "s3.amazonaws.com",
          "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
          "x-amz-date": "20130524T000000Z",
          "x-amz-decoded-content-length": "66560",
          "x-amz-storage-class": "REDUCED_REDUNDANCY",
          authorization: `AWS4-HMAC-SHA256 ${CREDENTIAL},SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9`,
        }),
      },
      () => SECRET,
      AWS_EXAMPLE_TIME,
    );
    const first = chunkSignature(seed, seed.signature, sha256(Buffer.alloc(65536, "a")));
    const second = chunkSignature(seed, first, sha256(Buffer.alloc(1024, "a")));
    const last = chunkSignature(seed, second, sha256(""));
    expect([first, second, last]).toEqual([
      "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
      "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
      "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
    ]);
  });
});

describe("a signed-chunk upload through the platform", () => {
  let p: TestPlatform;
  let creds: { endpointUrl: string; accessKeyId: string; secretAccessKey: string };
  let bucket: string;
  beforeAll(async () => {
    p = await startTestPlatform();
    creds = (await gql(p, `{ s3Credentials { endpointUrl accessKeyId secretAccessKey } }`)).data!.s3Credentials;
    bucket = (await gql(p, `mutation { createNetworkVolume(input: {name: "chunks", size: 1}) { id } }`)).data!.createNetworkVolume.id;
  });
  afterAll(async () => p?.dispose());

  /** PUT `chunks` as STREAMING-AWS4-HMAC-SHA256-PAYLOAD; `tamper` changes one byte of chunk 1 after signing. */
  function put(key: string, chunks: Buffer[], tamper = false): Promise<{ status: number; body: string }> {
    const url = new URL(`${creds.endpointUrl}/${bucket}/${key}`);
    const amzDate = new Date()
      .toISOString()
      .replace(/[-:]/g, "")
      .replace(/\.\d{3}/, "");
    const date = amzDate.slice(0, 8);
    const decoded = chunks.reduce((n, c) => n + c.length, 0);
    const h: Record<string, string> = {
      "content-encoding": "aws-chunked",
      host: url.host,
      "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
      "x-amz-date": amzDate,
      "x-amz-decoded-content-length": String(decoded),
    };
    const signed = Object.keys(h).sort();
    const scope = `${date}/local/s3/aws4_request`;
    const key4 = signingKey(creds.secretAccessKey, date, "local", "s3");
    const req: SignedRequest = { method: "PUT", rawPath: url.pathname, rawQuery: "", headers: headers(h) };
    const seed = createHmac("sha256", key4)
      .update(stringToSign(req, signed, h["x-amz-content-sha256"]!, amzDate, scope))
      .digest("hex");
    let previous = seed;
    const parts: Buffer[] = [];
    for (const chunk of [...chunks, Buffer.alloc(0)]) {
      previous = chunkSignature({ signingKey: key4, amzDate, scope }, previous, sha256(chunk));
      const sent = tamper && chunk === chunks[0] ? Buffer.from(chunk).fill(0x62, 0, 1) : chunk;
      parts.push(Buffer.from(`${chunk.length.toString(16)};chunk-signature=${previous}\r\n`), sent, Buffer.from("\r\n"));
    }
    const body = Buffer.concat(parts);
    return new Promise((resolve, reject) => {
      const r = request(
        url,
        {
          method: "PUT",
          headers: {
            ...h,
            "content-length": String(body.length),
            authorization: `AWS4-HMAC-SHA256 Credential=${creds.accessKeyId}/${scope},SignedHeaders=${signed.join(";")},Signature=${seed}`,
          },
        },
        (res) => {
          let text = "";
          res.on("data", (d) => (text += d)).on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      r.on("error", reject);
      r.end(body);
    });
  }

  it("stores the object when every chunk signature holds, and refuses a changed chunk", async () => {
    const chunks = [Buffer.alloc(65536, "a"), Buffer.alloc(1024, "a")];
    const ok = await put("signed.txt", chunks);
    expect(ok.status, ok.body).toBe(200);
    expect((await readFile(join(p.dataDir, "volumes", bucket, "signed.txt"))).equals(Buffer.concat(chunks))).toBe(true);
    const bad = await put("tampered.txt", chunks, true);
    expect(bad.status).toBe(403);
    expect(bad.body).toContain("<Code>SignatureDoesNotMatch</Code>");
    expect(await stat(join(p.dataDir, "volumes", bucket, "tampered.txt")).catch(() => "absent")).toBe("absent");
  });
});
