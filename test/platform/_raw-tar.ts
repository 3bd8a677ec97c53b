/** A ustar archive written byte by byte, for unsafe-artifact tests. */
import { gzipSync } from "node:zlib";

export interface RawEntry {
  name: string;
  type?: "0" | "2" | "1" | "3" | "5" | "6" | "x";
  body?: string;
  link?: string;
}

/** One ustar header block announcing `size` bytes of body. */
export function rawHeader(e: RawEntry, size: number): Buffer {
  const h = Buffer.alloc(512);
  h.write(e.name, 0, 100, "utf8");
  h.write("0000644\0", 100);
  h.write("0000000\0", 108);
  h.write("0000000\0", 116);
  h.write(`${size.toString(8).padStart(11, "0")}\0`, 124);
  h.write("00000000000\0", 136);
  h.write("        ", 148);
  h.write(e.type ?? "0", 156);
  if (e.link) h.write(e.link, 157, 100, "utf8");
  h.write("ustar\0", 257);
  h.write("00", 263);
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
  return h;
}

/** A ustar archive written byte by byte (tar's own writer refuses to make the bad ones). */
export function rawTar(entries: RawEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.body ?? "");
    blocks.push(rawHeader(e, body.length), body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}

/**
 * A gzip bomb: `head` (tar bytes, may be empty) then `gib` GiB of zeros, made of concatenated gzip
 * members (gunzip reads them as one stream) so it takes milliseconds to make.
 */
export function zeroBomb(head: Buffer, gib: number): Buffer {
  const member = gzipSync(Buffer.alloc(64 << 20), { level: 1 });
  return Buffer.concat([...(head.length ? [gzipSync(head)] : []), ...Array.from({ length: gib * 16 }, () => member)]);
}
