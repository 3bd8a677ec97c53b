/**
 * Artifact upload, step 2 of 3: `PUT <uploadUrl>` with the gzip bytes. The URL carries a
 * per-upload token (like a presigned URL); the API key is accepted too. The bytes are hashed
 * while they stream to disk, checked against the size and sha256 announced in
 * prepareArtifactUpload, checked entry by entry for safety, then stored content-addressed.
 */
import type { H3, H3Event } from "h3";
import { createHash } from "node:crypto";
import { createWriteStream, existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { Transform } from "node:stream";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { errors, isSvcError } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import { secretMatches } from "../_ids.ts";
import { checkArtifact } from "../workers/unpack.ts";
import { json, presentedKey, queryParam } from "./_http.ts";

export const ARTIFACT_ROUTE = "/v2/_artifacts";

/** The client went away before its body ended (Node's `aborted` error, a reset connection). */
const clientGone = (event: H3Event): boolean => {
  const req = event.runtime?.node?.req;
  return req ? !req.complete : event.req.signal.aborted;
};

export function registerUploadRoutes(app: H3, ctx: PlatformContext): void {
  app.put(`${ARTIFACT_ROUTE}/:key`, async (event: H3Event) => {
    let size = 0; // bytes received
    try {
      const key = event.context.params?.key ?? "";
      const upload = ctx.store.builds.upload(key);
      const byKey = secretMatches(presentedKey(event), ctx.apiKeyHash);
      const byToken = upload !== undefined && secretMatches(queryParam(event, "token") ?? undefined, upload.tokenHash);
      if (!byKey && !byToken) throw errors.UNAUTHORIZED();
      if (!upload || upload.expiresAt < Date.now()) throw errors.NOT_FOUND("Upload", key);
      const declared = event.req.headers.get("content-length");
      if (declared !== null && Number(declared) > upload.size) throw errors.PAYLOAD_TOO_LARGE(upload.size);
      const body = event.req.body;
      if (!body) throw errors.BAD_REQUEST("The upload has no body.");

      const dir = join(ctx.options.dataDir, "artifacts");
      await mkdir(dir, { recursive: true });
      const tmp = join(dir, `.${key}.part`);
      const hash = createHash("sha256");
      let head: Buffer | undefined;
      const meter = new Transform({
        transform(chunk: Buffer, _enc, done) {
          size += chunk.length;
          if (size > upload.size) return done(errors.PAYLOAD_TOO_LARGE(upload.size));
          if (!head) head = chunk.subarray(0, 2);
          hash.update(chunk);
          done(null, chunk);
        },
      });
      try {
        await pipeline(Readable.fromWeb(body as import("node:stream/web").ReadableStream), meter, createWriteStream(tmp));
        if (size !== upload.size) throw errors.BAD_REQUEST(`The upload is ${size} bytes but prepareArtifactUpload announced ${upload.size}.`);
        if (!head || head[0] !== 0x1f || head[1] !== 0x8b) throw errors.BAD_REQUEST("The upload is not gzip data (send the .tar.gz artifact).");
        const sha256 = hash.digest("hex");
        if (upload.expectedSha256 && upload.expectedSha256 !== sha256) {
          throw errors.BAD_REQUEST(`The upload's sha256 is ${sha256}, not ${upload.expectedSha256} as announced.`);
        }
        await checkArtifact(tmp);
        const path = join(dir, `${sha256}.tar.gz`);
        if (existsSync(path)) await rm(tmp, { force: true });
        else await rename(tmp, path);
        ctx.store.builds.addArtifact({ sha256, size, path });
        ctx.store.builds.markUploaded(key, sha256);
        return json(200, { objectKey: key, sha256, size });
      } finally {
        await rm(tmp, { force: true });
      }
    } catch (error) {
      // A refusal (401, 404, 413, a bad upload) is the answer even though its body was never read.
      if (!isSvcError(error) && clientGone(event)) {
        // Nobody reads an answer: one line, no stack; the partial file is already removed (finally).
        ctx.options.log(`upload ${event.context.params?.key ?? ""}: the client disconnected after ${size} bytes; the partial upload was removed`);
        throw errors.BAD_REQUEST("The upload was cut short: the client disconnected.");
      }
      throw error;
    }
  });
}
