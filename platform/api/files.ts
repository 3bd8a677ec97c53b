/** Output files (contracts section 6): workers upload, API key holders download, swept after retention. */
import type { H3, H3Event } from "h3";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import { newId } from "../_ids.ts";

const FILE_NAME = /^[^/\\\0]+$/;

function checkName(name: string): string {
  if (!name || name === "." || name === ".." || !FILE_NAME.test(name) || name.length > 255) {
    throw errors.BAD_REQUEST(`A file name must be a plain name (no folders), got "${name}"`);
  }
  return name;
}

export async function saveOutputFile(ctx: PlatformContext, event: H3Event, endpointId: string, rawName: string) {
  const name = checkName(rawName);
  const id = newId("f", 20);
  const dir = join(ctx.options.dataDir, "files", id);
  await mkdir(dir, { recursive: true });
  const path = join(dir, name);
  let size = 0;
  try {
    const body = event.req.body;
    if (!body) throw errors.BAD_REQUEST("The file upload has no body");
    const source = Readable.fromWeb(body as import("node:stream/web").ReadableStream);
    source.on("data", (chunk: Buffer) => (size += chunk.length));
    await pipeline(source, createWriteStream(path));
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const now = Date.now();
  const expiresAt = now + ctx.options.fileRetentionMs;
  ctx.store.files.add({
    id,
    name,
    path,
    size,
    endpointId,
    contentType: event.req.headers.get("content-type") ?? "application/octet-stream",
    createdAt: now,
    expiresAt,
  });
  return { url: `${ctx.baseUrl()}/v2/files/${id}/${encodeURIComponent(name)}`, expiresAt: new Date(expiresAt).toISOString() };
}

export function registerFileRoutes(app: H3, ctx: PlatformContext): void {
  app.get("/v2/files/:id/:name", (event) => {
    const { id = "", name = "" } = event.context.params ?? {};
    const file = ctx.store.files.get(id);
    if (!file || file.name !== decodeURIComponent(name) || file.expiresAt <= Date.now()) throw errors.NOT_FOUND("File", `${id}/${name}`);
    const stream = Readable.toWeb(createReadStream(file.path)) as unknown as ReadableStream;
    return new Response(stream, {
      status: 200,
      headers: {
        "content-type": file.contentType,
        "content-length": String(file.size),
        "content-disposition": `inline; filename="${file.name.replace(/"/g, "")}"`,
      },
    });
  });
}

/** Deletes expired files (rows and bytes). */
export async function sweepFiles(ctx: PlatformContext, now = Date.now()): Promise<number> {
  const expired = ctx.store.files.expired(now);
  for (const f of expired) {
    ctx.store.files.remove(f.id);
    await rm(join(ctx.options.dataDir, "files", f.id), { recursive: true, force: true });
  }
  return expired.length;
}
