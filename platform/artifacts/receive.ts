/**
 * An uploaded artifact's bytes (step 2 of 3 of the upload: `PUT <uploadUrl>`, api/uploads.ts): hashed
 * while they stream to disk, checked against the size and sha256 announced in prepareArtifactUpload
 * and entry by entry for safety (./unpack.ts), then kept content-addressed under `<data>/artifacts/`.
 */
import { createHash } from "node:crypto";
import { createWriteStream, existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { Readable, Transform } from "node:stream";
import type { ReadableStream } from "node:stream/web";
import { pipeline } from "node:stream/promises";
import { errors } from "../../core/errors.ts";
import type { ArtifactRow, UploadRow } from "../store/index.ts";
import { checkArtifact } from "./unpack.ts";

/** Where a client PUTs an artifact: the route api/uploads.ts serves, the URL prepareArtifactUpload hands out. */
export const ARTIFACT_ROUTE = "/v2/_artifacts";

/** The artifact `body` of `upload`, checked and stored; `received` counts its bytes as they come (a cut-short upload's log line says how many). */
export async function receiveArtifact(
  dataDir: string,
  key: string,
  upload: UploadRow,
  body: ReadableStream,
  received: { bytes: number },
): Promise<ArtifactRow> {
  const dir = join(dataDir, "artifacts");
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `.${key}.part`);
  const hash = createHash("sha256");
  let head: Buffer | undefined;
  const meter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      received.bytes += chunk.length;
      if (received.bytes > upload.size) return done(errors.PAYLOAD_TOO_LARGE(upload.size));
      if (!head) head = chunk.subarray(0, 2);
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(body), meter, createWriteStream(tmp));
    const size = received.bytes;
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
    return { sha256, size, path };
  } finally {
    await rm(tmp, { force: true });
  }
}
