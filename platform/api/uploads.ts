/**
 * Artifact upload, step 2 of 3: `PUT <uploadUrl>` with the gzip bytes. The URL carries a
 * per-upload token (like a presigned URL); the API key is accepted too. The bytes are checked and
 * stored by ../artifacts/receive.ts.
 */
import type { H3, H3Event } from "h3";
import type { ReadableStream } from "node:stream/web";
import { errors, isSvcError } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import { secretMatches } from "../_ids.ts";
import { ARTIFACT_ROUTE, receiveArtifact } from "../artifacts/receive.ts";
import { json, presentedKey, queryParam } from "./_http.ts";

/** The client went away before its body ended (Node's `aborted` error, a reset connection). */
const clientGone = (event: H3Event): boolean => {
  const req = event.runtime?.node?.req;
  return req ? !req.complete : event.req.signal.aborted;
};

export function registerUploadRoutes(app: H3, ctx: PlatformContext): void {
  app.put(`${ARTIFACT_ROUTE}/:key`, async (event: H3Event) => {
    const received = { bytes: 0 };
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

      const artifact = await receiveArtifact(ctx.options.dataDir, key, upload, body as ReadableStream, received);
      ctx.store.builds.addArtifact(artifact);
      ctx.store.builds.markUploaded(key, artifact.sha256);
      return json(200, { objectKey: key, sha256: artifact.sha256, size: artifact.size });
    } catch (error) {
      // A refusal (401, 404, 413, a bad upload) is the answer even though its body was never read.
      if (!isSvcError(error) && clientGone(event)) {
        // Nobody reads an answer: one line, no stack; the partial file is already removed (finally).
        ctx.options.log(`upload ${event.context.params?.key ?? ""}: the client disconnected after ${received.bytes} bytes; the partial upload was removed`);
        throw errors.BAD_REQUEST("The upload was cut short: the client disconnected.");
      }
      throw error;
    }
  });
}
