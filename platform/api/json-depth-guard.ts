/**
 * The JSON nesting limit (./_json.ts MAX_JSON_DEPTH) on a body the platform passes on without
 * parsing: a load-balanced route's request, streamed to its worker (./lb-proxy.ts). The worker's
 * decoder recurses, so a body nested thousands deep would reach it as a crash (a 500); the guard
 * counts brackets outside strings as the bytes go through, and stops the body before its end
 * reaches the worker, so that the client gets the 400 JSON_TOO_DEEP every other route answers.
 */
import { Transform, type TransformCallback } from "node:stream";
import { errors, type SvcError } from "../../core/errors.ts";
import { MAX_JSON_DEPTH } from "./_json.ts";

const QUOTE = 34;
const BACKSLASH = 92;
const OPENS = new Set([91, 123]);
const CLOSES = new Set([93, 125]);

export class JsonDepthGuard extends Transform {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** JSON_TOO_DEEP once the body went past the limit. */
  refused: SvcError | undefined;

  constructor(private readonly where = "The request body") {
    super();
  }

  /** Scans bytes; false (and `refused` set) once they nest deeper than the limit. */
  scan(bytes: Uint8Array): boolean {
    for (let i = 0; i < bytes.length; i++) {
      const c = bytes[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === BACKSLASH) this.escaped = true;
        else if (c === QUOTE) this.inString = false;
      } else if (c === QUOTE) this.inString = true;
      else if (OPENS.has(c)) {
        if (++this.depth > MAX_JSON_DEPTH) {
          this.refused = errors.JSON_TOO_DEEP(this.where, MAX_JSON_DEPTH);
          return false;
        }
      } else if (CLOSES.has(c)) this.depth--;
    }
    return true;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.scan(chunk)) done(null, chunk);
    else done(this.refused);
  }
}
