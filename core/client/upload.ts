/**
 * Content-addressed artifact upload: prepareArtifactUpload with the sha256; when the platform
 * already has those bytes (`alreadyUploaded`) no PUT is sent; else the gzip is streamed from disk.
 * finalizeArtifactUpload then records the build with its manifest.
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { Readable } from "node:stream";
import { errors } from "../errors.ts";
import type { GraphQLRunner } from "./_graphql.ts";
import { documents } from "./_graphql.ts";
import { httpError, httpRequest } from "./http.ts";
import type { PlatformBuild, UploadResult } from "./types.ts";

export interface ArtifactRef {
  path: string;
  sha256: string;
  size: number;
}

export async function uploadArtifact(
  baseUrl: string,
  apiKey: string,
  gql: GraphQLRunner,
  appId: string,
  artifact: ArtifactRef,
  manifest: unknown,
  /** Hears the bytes as they are read for the PUT (a progress line). */
  onBytes?: (bytes: number) => void,
): Promise<UploadResult> {
  const size = artifact.size || (await stat(artifact.path)).size;
  const { prepareArtifactUpload: prepared } = await gql<{
    prepareArtifactUpload: { uploadUrl: string; objectKey: string; expiresAt: string; alreadyUploaded: boolean };
  }>("prepareArtifactUpload", documents.prepareArtifactUpload, { appId, size, sha256: artifact.sha256 });

  if (!prepared.alreadyUploaded) {
    const target = new URL(prepared.uploadUrl, `${baseUrl}/`);
    const headers: Record<string, string> = { "content-type": "application/gzip", "content-length": String(size) };
    // Our key goes only to our platform; a presigned URL elsewhere (object storage) carries its own auth.
    if (target.origin === new URL(baseUrl).origin) headers.authorization = `Bearer ${apiKey}`;
    const response = await httpRequest(baseUrl, target.href, {
      method: "PUT",
      headers,
      body: onBytes ? Readable.from(counted(artifact.path, onBytes)) : createReadStream(artifact.path),
    });
    if (response.status >= 300) throw httpError("artifact upload (PUT)", response);
  }

  const { finalizeArtifactUpload: build } = await gql<{ finalizeArtifactUpload: PlatformBuild }>("finalizeArtifactUpload", documents.finalizeArtifactUpload, {
    objectKey: prepared.objectKey,
    manifest,
  });
  if (!build?.id) throw errors.PLATFORM_ERROR("finalizeArtifactUpload", "no build id in the answer");
  return { buildId: build.id, skipped: prepared.alreadyUploaded, build: { id: build.id, sha256: build.sha256, size: build.size } };
}

async function* counted(path: string, onBytes: (bytes: number) => void): AsyncGenerator<Buffer> {
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    onBytes(chunk.length);
    yield chunk;
  }
}
