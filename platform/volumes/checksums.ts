/**
 * The flexible checksums S3 clients send (x-amz-checksum-<algorithm>, as a header or an aws-chunked
 * trailer; the AWS SDK v3 sends CRC32 by default): computed while the bytes arrive and compared.
 * CRC32C and CRC64NVME come from the AWS SDK's own checksum package, loaded on first use (the
 * platform starts without it).
 */
import { createHash, type Hash } from "node:crypto";
import { crc32 } from "node:zlib";

export const CHECKSUM_ALGORITHMS = ["crc32", "crc32c", "crc64nvme", "sha1", "sha256"] as const;
export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];

export const isChecksumAlgorithm = (name: string): name is ChecksumAlgorithm => (CHECKSUM_ALGORITHMS as readonly string[]).includes(name);

/** The S3 XML element of an algorithm's checksum (`ChecksumCRC32`). */
export const checksumElement = (algorithm: ChecksumAlgorithm) => `Checksum${algorithm.toUpperCase()}`;

export interface Checksum {
  update(data: Buffer): void;
  /** base64 of the big-endian digest, as the x-amz-checksum-* headers carry it. */
  digest(): Promise<string>;
}

class Crc32 implements Checksum {
  private value = 0;
  update(data: Buffer) {
    this.value = crc32(data, this.value);
  }
  async digest() {
    const out = Buffer.alloc(4);
    out.writeUInt32BE(this.value >>> 0);
    return out.toString("base64");
  }
}

class Digest implements Checksum {
  private readonly hash: Hash;
  constructor(algorithm: "sha1" | "sha256") {
    this.hash = createHash(algorithm);
  }
  update(data: Buffer) {
    this.hash.update(data);
  }
  async digest() {
    return this.hash.digest("base64");
  }
}

class SdkChecksum implements Checksum {
  constructor(private readonly inner: { update(data: Uint8Array): void; digest(): Promise<Uint8Array> }) {}
  static async of(algorithm: "crc32c" | "crc64nvme"): Promise<SdkChecksum> {
    const { Crc32c, Crc64Nvme } = await import("@aws-sdk/checksums/crc");
    return new SdkChecksum(algorithm === "crc32c" ? new Crc32c() : new Crc64Nvme());
  }
  update(data: Buffer) {
    this.inner.update(data);
  }
  async digest() {
    return Buffer.from(await this.inner.digest()).toString("base64");
  }
}

export async function createChecksum(algorithm: ChecksumAlgorithm): Promise<Checksum> {
  switch (algorithm) {
    case "crc32":
      return new Crc32();
    case "crc32c":
    case "crc64nvme":
      return SdkChecksum.of(algorithm);
    default:
      return new Digest(algorithm);
  }
}

/** A multipart object's checksum (S3's COMPOSITE type): the checksum of the parts' raw checksums, `-<parts>`. */
export async function compositeChecksum(algorithm: ChecksumAlgorithm, parts: string[]): Promise<string> {
  const c = await createChecksum(algorithm);
  for (const p of parts) c.update(Buffer.from(p, "base64"));
  return `${await c.digest()}-${parts.length}`;
}

/** A stored checksum as `<algorithm>:<base64>` (volume_objects.checksum). */
export const formatChecksum = (algorithm: ChecksumAlgorithm, value: string) => `${algorithm}:${value}`;
export function parseChecksum(stored: string | null): { algorithm: ChecksumAlgorithm; value: string } | undefined {
  const at = stored?.indexOf(":") ?? -1;
  const algorithm = at > 0 ? stored!.slice(0, at) : "";
  return isChecksumAlgorithm(algorithm) ? { algorithm, value: stored!.slice(at + 1) } : undefined;
}
