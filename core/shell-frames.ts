/**
 * The byte stream of `svc shell` (docs/platform.md, "Shells"): after the platform answers the
 * upgrade (101), both sides send frames — a type byte, a 4-byte big-endian length, the payload —
 * so the shell's stdout, stderr and exit status travel apart on one connection, and the client's
 * stdin and its end arrive in order. The CLI (core/client/shell.ts) and the platform
 * (platform/api/shell-route.ts) share this file.
 */

/** What a frame carries. */
export const Frame = {
  /** client → platform: bytes for the shell's stdin */
  STDIN: 0,
  /** client → platform: the client's stdin ended (not sent for a terminal: Ctrl+D is a byte there) */
  STDIN_END: 1,
  /** platform → client */
  STDOUT: 2,
  STDERR: 3,
  /** platform → client, last: `{"code": number | null, "signal": string | null}` as JSON */
  EXIT: 4,
} as const;

export type FrameType = (typeof Frame)[keyof typeof Frame];

/** The protocol's name in `Upgrade:` (and the route: `GET /v2/<endpoint id>/shell`). */
export const SHELL_PROTOCOL = "svc-shell";

const HEADER = 5;
/** Longer payloads are split: a frame never needs more memory than this to pass. */
const MAX_PAYLOAD = 1 << 20;

export function encodeFrame(type: FrameType, payload: Uint8Array = new Uint8Array(0)): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at === 0 || at < payload.byteLength; at += MAX_PAYLOAD) {
    const part = payload.subarray(at, at + MAX_PAYLOAD);
    const head = Buffer.alloc(HEADER);
    head.writeUInt8(type, 0);
    head.writeUInt32BE(part.byteLength, 1);
    out.push(head, Buffer.from(part.buffer, part.byteOffset, part.byteLength));
  }
  return out;
}

/** Reads frames from the chunks a socket gives, however they are cut. */
export class FrameReader {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly onFrame: (type: number, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.pending = this.pending.byteLength ? Buffer.concat([this.pending, chunk]) : chunk;
    while (this.pending.byteLength >= HEADER) {
      const length = this.pending.readUInt32BE(1);
      if (length > MAX_PAYLOAD) throw new Error(`a shell frame of ${length} bytes (at most ${MAX_PAYLOAD})`);
      if (this.pending.byteLength < HEADER + length) return;
      const type = this.pending.readUInt8(0);
      const payload = this.pending.subarray(HEADER, HEADER + length);
      this.pending = this.pending.subarray(HEADER + length);
      this.onFrame(type, payload);
    }
  }
}
