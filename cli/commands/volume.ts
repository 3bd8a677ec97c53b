/**
 * `svc volume create | list | get | delete | ls | upload | download | rm | credentials`: network
 * volumes (docs/volumes.md). The management calls go over GraphQL; the bytes over the volume's
 * S3 API with the AWS SDK for JavaScript v3 (cli/volume/).
 */
import type { CAC } from "cac";
import { DeleteObjectsCommand } from "@aws-sdk/client-s3";
import type { PlatformClient, PlatformVolume } from "../../core/client/index.ts";
import { errors, isSvcError } from "../../core/errors.ts";
import { formatBytes } from "../../core/format-bytes.ts";
import { createLogger, type Logger } from "../../core/logger.ts";
import { confirm, connect, printTable, type PlatformFlags } from "../_platform.ts";
import { printJson, projectRoot } from "../_shared.ts";
import { listAll, openVolume } from "../volume/s3.ts";
import { asFolder, parseVolumePath } from "../volume/volume-path.ts";
import { localFiles, uploadFiles, abortUnfinished } from "../volume/upload.ts";
import { downloadFiles, planDownload } from "../volume/download.ts";

export interface VolumeFlags extends PlatformFlags {
  size?: number | string;
  datacenter?: string;
  force?: boolean;
  recursive?: boolean;
}

/** What follows `svc ` (cac's help prints `$ svc <usage>`). */
const USAGE =
  "volume create <name> --size <GB> [--datacenter <id>] | list | get <name> | delete <name> [--force] | ls <name>[:path] | upload <local> <name>[:path] | download <name>[:path] <local> | rm <name>:<path> [--recursive] | credentials [name]";
const HEADERS = ["NAME", "ID", "SIZE", "DATA CENTER"];
const row = (v: PlatformVolume) => [v.name, v.id, `${v.size} GB`, v.dataCenterId];

async function mustVolume(client: PlatformClient, name: string | undefined, action: string): Promise<PlatformVolume> {
  if (!name) throw errors.CLI_USAGE(`Usage: svc volume ${action} <name>`, "volume");
  const volume = await client.findVolume(name);
  if (!volume) throw errors.VOLUME_NOT_FOUND(name);
  return volume;
}

/** The AWS SDK's errors (S3ServiceException, network) as the catalogue's, with the S3 code kept. */
function s3Failure(what: string, error: unknown): unknown {
  if (isSvcError(error) || (error as Error)?.name === "AbortError") return error;
  const e = error as { name?: string; message?: string; Code?: string };
  return errors.VOLUME_TRANSFER_FAILED(what, `${e.name ?? "Error"}: ${e.message ?? String(error)}`);
}

export async function volumeCommand(
  client: PlatformClient,
  action: string,
  args: string[],
  flags: VolumeFlags,
  signal?: AbortSignal,
  logger: Logger = createLogger("info"),
): Promise<unknown> {
  const [first, second] = args;
  switch (action) {
    case "list":
      return { volumes: await client.listVolumes() };
    case "get": {
      const volume = await mustVolume(client, first, "get");
      const v = await openVolume(client, volume);
      const { objects } = await listAll(v, "");
      return { volume, used: objects.reduce((n, o) => n + o.size, 0), objects: objects.length };
    }
    case "create": {
      if (!first) throw errors.CLI_USAGE("Usage: svc volume create <name> --size <GB> [--datacenter <id>]", "volume");
      const size = Number(flags.size);
      if (!Number.isInteger(size) || size < 1) throw errors.CLI_USAGE(`--size must be a whole number of GB (1 or more), not "${flags.size ?? ""}".`, "volume");
      return { volume: await client.createVolume({ name: first, size, dataCenterId: flags.datacenter }) };
    }
    case "delete": {
      const volume = await mustVolume(client, first, "delete");
      if (!(await confirm(`Delete volume ${volume.name} and all its data?`, flags, `delete volume ${volume.name}`))) return undefined;
      await client.deleteVolume(volume.id, Boolean(flags.force));
      return { deleted: volume };
    }
    case "credentials":
      return volumeCredentials(client, first);
    case "ls":
      return listVolumePath(client, first);
    case "upload":
      return uploadToVolume(client, first, second, logger, signal);
    case "download":
      return downloadFromVolume(client, first, second, logger);
    case "rm":
      return removeVolumePath(client, first, flags);
    default:
      throw errors.CLI_USAGE(`Unknown action "${action}": use svc ${USAGE}.`, "volume");
  }
}

/** The AWS_* variables that point an S3 client at the volumes (and SVC_VOLUME_BUCKET for one volume). */
async function volumeCredentials(client: PlatformClient, first: string | undefined): Promise<unknown> {
  const access = await client.s3Access();
  const volume = first ? await mustVolume(client, parseVolumePath(first).volume, "credentials") : undefined;
  return {
    env: {
      AWS_ENDPOINT_URL: access.endpointUrl,
      AWS_ACCESS_KEY_ID: access.accessKeyId,
      AWS_SECRET_ACCESS_KEY: access.secretAccessKey,
      AWS_DEFAULT_REGION: volume?.dataCenterId ?? "local",
      ...(volume ? { SVC_VOLUME_BUCKET: volume.id } : {}),
    },
  };
}

/** `ls <name>[:path]`: one level under a folder, or the one file the path names. */
async function listVolumePath(client: PlatformClient, first: string | undefined): Promise<unknown> {
  if (!first) throw errors.CLI_USAGE("Usage: svc volume ls <name>[:path]", "volume");
  const { volume, path } = parseVolumePath(first);
  const v = await openVolume(client, await mustVolume(client, volume, "ls"));
  const prefix = path && !path.endsWith("/") && (await listAll(v, path)).objects.some((o) => o.key === path) ? path : asFolder(path);
  const listed = await listAll(v, prefix, "/").catch((e) => Promise.reject(s3Failure(`Listing ${first}`, e)));
  return { volume: v.volume.name, prefix, ...listed };
}

/** `upload <local> <name>[:path]` with a progress bar. */
async function uploadToVolume(
  client: PlatformClient,
  first: string | undefined,
  second: string | undefined,
  logger: Logger,
  signal?: AbortSignal,
): Promise<unknown> {
  if (!first || !second) throw errors.CLI_USAGE("Usage: svc volume upload <local file or folder> <name>[:path]", "volume");
  const { volume, path } = parseVolumePath(second);
  const v = await openVolume(client, await mustVolume(client, volume, "upload"));
  const files = await localFiles(first, path);
  const progress = logger.progress(
    `upload ${volume}`,
    files.reduce((n, f) => n + f.size, 0),
  );
  try {
    const results = await uploadFiles(v, files, path.endsWith("/") || files.length > 1 ? asFolder(path) : path, progress, signal);
    return { uploaded: results };
  } catch (error) {
    throw s3Failure(`Uploading ${first} to ${second}`, error);
  } finally {
    progress.end();
  }
}

/** `download <name>[:path] <local>` with a progress bar. */
async function downloadFromVolume(client: PlatformClient, first: string | undefined, second: string | undefined, logger: Logger): Promise<unknown> {
  if (!first || !second) throw errors.CLI_USAGE("Usage: svc volume download <name>[:path] <local file or folder>", "volume");
  const { volume, path } = parseVolumePath(first);
  const v = await openVolume(client, await mustVolume(client, volume, "download"));
  const planned = await planDownload(v, path, second).catch((e) => Promise.reject(s3Failure(`Listing ${first}`, e)));
  const progress = logger.progress(
    `download ${volume}`,
    planned.reduce((n, p) => n + p.object.size, 0),
  );
  try {
    return { downloaded: await downloadFiles(v, planned, progress) };
  } catch (error) {
    throw s3Failure(`Downloading ${first}`, error);
  } finally {
    progress.end();
  }
}

/** `rm <name>:<path> [--recursive]`: the objects (1000 a request) and, for a file, its unfinished uploads. */
async function removeVolumePath(client: PlatformClient, first: string | undefined, flags: VolumeFlags): Promise<unknown> {
  if (!first) throw errors.CLI_USAGE("Usage: svc volume rm <name>:<path> [--recursive]", "volume");
  const { volume, path } = parseVolumePath(first);
  if (!path) throw errors.VOLUME_PATH_INVALID(first, "name a file or folder (svc volume delete removes the volume)");
  const v = await openVolume(client, await mustVolume(client, volume, "rm"));
  const { objects } = await listAll(v, flags.recursive ? asFolder(path) : path);
  const keys = flags.recursive ? objects.map((o) => o.key) : objects.filter((o) => o.key === path).map((o) => o.key);
  if (keys.length === 0 && !flags.recursive && objects.some((o) => o.key.startsWith(asFolder(path))))
    throw errors.CLI_USAGE(`${first} is a folder: pass --recursive to remove it and what it holds.`, "volume");
  for (let i = 0; i < keys.length; i += 1000) {
    await v.s3.send(new DeleteObjectsCommand({ Bucket: v.bucket, Delete: { Objects: keys.slice(i, i + 1000).map((Key) => ({ Key })), Quiet: true } }));
  }
  const aborted = flags.recursive ? 0 : await abortUnfinished(v, path);
  return { removed: keys, abortedUploads: aborted };
}

function print(action: string, result: Record<string, any>): void {
  if (result.volumes) {
    printTable(HEADERS, (result.volumes as PlatformVolume[]).map(row));
    return;
  }
  if (action === "get") {
    printTable([...HEADERS, "USED", "OBJECTS"], [[...row(result.volume), formatBytes(result.used), result.objects]]);
    return;
  }
  if (result.volume && action === "create") {
    printTable(HEADERS, [row(result.volume)]);
    process.stderr.write(`Upload into it: svc volume upload <folder> ${result.volume.name}\n`);
    return;
  }
  if (result.deleted) return void process.stdout.write(`Deleted volume ${result.deleted.name} (${result.deleted.id}).\n`);
  if (result.env) {
    for (const [k, v] of Object.entries(result.env as Record<string, string>))
      process.stdout.write(`export ${k}=${JSON.stringify(v).replace(/^"|"$/g, "'")}\n`);
    process.stderr.write("The platform's S3 API takes path-style requests: aws configure set default.s3.addressing_style path\n");
    return;
  }
  if (action === "ls") {
    for (const f of result.folders as string[]) process.stdout.write(`${"PRE".padStart(30)} ${f.slice(result.prefix.length)}\n`);
    for (const o of result.objects as Array<{ key: string; size: number; lastModified?: Date }>) {
      process.stdout.write(
        `${(o.lastModified?.toISOString().slice(0, 19).replace("T", " ") ?? "").padEnd(19)} ${String(o.size).padStart(10)} ${o.key.slice(result.prefix.length) || o.key}\n`,
      );
    }
    return;
  }
  if (result.uploaded) {
    const r = result.uploaded as Array<{ action: string; sentBytes: number; reusedBytes: number }>;
    const sent = r.reduce((n, x) => n + x.sentBytes, 0);
    const changed = r.filter((x) => x.action !== "unchanged").length;
    process.stdout.write(
      `Uploaded ${changed} file(s), ${r.length - changed} unchanged; ${sent} bytes sent, ${r.reduce((n, x) => n + x.reusedBytes, 0)} bytes already on the volume.\n`,
    );
    return;
  }
  if (result.downloaded) return void process.stdout.write(`Downloaded ${result.downloaded.downloaded} file(s), ${result.downloaded.unchanged} unchanged.\n`);
  if (result.removed) process.stdout.write(`Removed ${result.removed.length} object(s).\n`);
}

export function registerVolume(cli: CAC): void {
  cli
    .command("volume <action> [...args]", "Network volumes (model weights): create | list | get | delete | ls | upload | download | rm | credentials")
    .usage(USAGE)
    .option("--size <GB>", "Size of a new volume in GB (create)")
    .option("--datacenter <id>", "Data centre of a new volume (create; default: the platform's)")
    .option("--force", "Delete a volume that endpoints use, detaching it from them (delete)")
    .option("--recursive", "Remove a folder and what it holds (rm)")
    .option("--yes, -y", "Do not ask for confirmation (delete)")
    .option("--json", "Print the result as JSON")
    .option("--root <dir>", "Project folder, for its .env (default: current folder)")
    .action(async (action: string, args: string[], flags: VolumeFlags) => {
      const { client } = await connect(projectRoot(flags));
      const controller = new AbortController();
      const onInterrupt = () => {
        process.stderr.write("\nInterrupted: the parts sent so far stay on the volume; run the same command again to resume.\n");
        controller.abort();
      };
      process.once("SIGINT", onInterrupt);
      try {
        const result = (await volumeCommand(client, action, args, flags, controller.signal)) as Record<string, any> | undefined;
        if (!result) return void process.stderr.write("Nothing deleted.\n");
        if (flags.json) return printJson({ ok: true, ...result });
        print(action, result);
      } finally {
        process.off("SIGINT", onInterrupt);
      }
    });
}
