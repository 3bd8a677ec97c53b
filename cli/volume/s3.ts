/**
 * An S3 client (AWS SDK for JavaScript v3) for one volume: the platform's S3 endpoint, path-style,
 * the volume's data centre as region, checksums on every write (the SDK's CRC32 default).
 */
import { S3Client, ListObjectsV2Command } from "@aws-sdk/client-s3";
import type { PlatformClient, PlatformVolume } from "../../core/client/index.ts";

const UNSIGNED_BODIES = new Set(["PutObjectCommand", "UploadPartCommand"]);

export interface OpenVolume {
  volume: PlatformVolume;
  s3: S3Client;
  bucket: string;
  endpointUrl: string;
  accessKeyId: string;
  secretAccessKey: string;
}

// The SDK warns on Node 20 at its first call (it will need Node 22 from 2027); svc runs on Node 20.19+.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

/** An S3 client for a volume already looked up (cli/commands/volume.ts mustVolume). */
export async function openVolume(client: PlatformClient, volume: PlatformVolume): Promise<OpenVolume> {
  const access = await client.s3Access();
  const s3 = new S3Client({
    endpoint: access.endpointUrl,
    forcePathStyle: true,
    region: volume.dataCenterId,
    credentials: { accessKeyId: access.accessKeyId, secretAccessKey: access.secretAccessKey },
    maxAttempts: 5,
  });
  // Object and part bodies go unsigned: each carries a CRC32 and a Content-MD5 the server checks, and
  // the SigV4 SHA-256 of the body would hash every byte once more on each side (docs/volumes.md, "Measuring").
  s3.middlewareStack.add(
    (next, context) => async (args) => {
      if (UNSIGNED_BODIES.has(context.commandName ?? ""))
        (args.request as { headers: Record<string, string> }).headers["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD";
      return next(args);
    },
    { step: "build", name: "svcUnsignedBodies" },
  );
  return { volume, s3, bucket: volume.id, ...access };
}

export interface RemoteObject {
  key: string;
  size: number;
  etag: string;
  lastModified?: Date;
}

/** Every object under `prefix` (all pages), and the folders one level down when `delimiter` is given. */
export async function listAll(v: OpenVolume, prefix: string, delimiter?: string): Promise<{ objects: RemoteObject[]; folders: string[] }> {
  const objects: RemoteObject[] = [];
  const folders: string[] = [];
  let token: string | undefined;
  do {
    const page = await v.s3.send(new ListObjectsV2Command({ Bucket: v.bucket, Prefix: prefix || undefined, Delimiter: delimiter, ContinuationToken: token }));
    for (const o of page.Contents ?? []) objects.push({ key: o.Key!, size: o.Size ?? 0, etag: (o.ETag ?? "").replace(/"/g, ""), lastModified: o.LastModified });
    for (const f of page.CommonPrefixes ?? []) folders.push(f.Prefix!);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return { objects, folders };
}
