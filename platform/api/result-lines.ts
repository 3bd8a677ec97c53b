/**
 * jobs-done's body (one result a line, docs/platform.md "Hot path"), read whole within `limit`.
 * Past the limit it is read on to its end keeping only each line's first bytes, where the job's
 * id is (the runtime writes `{"id": ...` first): a batch whose results together are too large then
 * fails its own jobs at once (worker-jobs.ts) instead of leaving them IN_PROGRESS until they time out.
 */
import type { IncomingMessage } from "node:http";
import { errors, isSvcError } from "../../core/errors.ts";
import { isUtf8 } from "node:buffer";

/** Bytes kept of each line past the limit: enough for `{"id": "<id>"` with room for spacing. */
const HEAD_BYTES = 512;
const NEWLINE = 10;
const LEADING_ID = /^\s*\{\s*"id"\s*:\s*("(?:[^"\\]|\\.)*")/;

export type ResultLines = { text: string } | { overLimit: string[] };

/** The ids that lead the given line heads (lines without one are left out). */
const idsOf = (heads: string[]): string[] =>
  heads.flatMap((head) => {
    const quoted = LEADING_ID.exec(head)?.[1];
    try {
      return quoted ? [JSON.parse(quoted) as string] : [];
    } catch {
      return [];
    }
  });

/** Each line's first HEAD_BYTES, fed chunk by chunk. */
function lineHeads() {
  const heads: string[] = [];
  let head: Buffer[] = [];
  let size = 0;
  const endLine = () => {
    if (size > 0) heads.push(Buffer.concat(head).toString("utf8"));
    head = [];
    size = 0;
  };
  return {
    feed(chunk: Buffer) {
      for (let from = 0; from < chunk.length; ) {
        const newline = chunk.indexOf(NEWLINE, from);
        const end = newline < 0 ? chunk.length : newline;
        if (size < HEAD_BYTES) {
          const piece = chunk.subarray(from, Math.min(end, from + HEAD_BYTES - size));
          head.push(piece);
          size += piece.length;
        }
        if (newline < 0) break;
        endLine();
        from = newline + 1;
      }
    },
    ids: () => {
      endLine();
      return idsOf(heads);
    },
  };
}

export function readResultLines(req: IncomingMessage, limit: number): Promise<ResultLines> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over: ReturnType<typeof lineHeads> | undefined;
    const fail = (error: unknown) => {
      req.off("data", onData);
      reject(isSvcError(error) ? error : errors.BAD_REQUEST(`The request body could not be read: ${(error as Error)?.message ?? error}`));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (over) return over.feed(chunk);
      if (size <= limit) return void chunks.push(chunk);
      over = lineHeads();
      for (const kept of chunks) over.feed(kept);
      chunks.length = 0;
      over.feed(chunk);
    };
    req.on("data", onData);
    req.once("end", () => {
      try {
        const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
        if (!over && !isUtf8(bytes)) throw errors.BODY_NOT_UTF8();
        resolve(over ? { overLimit: over.ids() } : { text: bytes.toString("utf8") });
      } catch (error) {
        reject(error);
      }
    });
    req.once("error", fail);
    req.once("close", () => {
      if (!req.complete) fail(new Error("the client closed the connection"));
    });
  });
}
