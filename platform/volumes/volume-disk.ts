/**
 * A volume's size as a file system: each volume is a sparse ext4 image (`<state>/volume-disks/<id>.ext4`,
 * costing nothing until written) mounted on a loop device at the volume's folder, so every writer —
 * a worker through /platform-volume, the S3 API, anything on the host — meets ENOSPC at the size.
 * A quota was the other way: project quotas need the state dir's own file system made with them,
 * which a user's disk is not; an image needs only root and a loop device. Without them (not root,
 * no /dev/loop-control, no mkfs.ext4) volumes stay plain folders and only the S3 API holds the size:
 * `diskSupport` says why, once (docs/volumes.md, "Size").
 */
import { execFile } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { chmod, mkdir, open, rm, rmdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { GB } from "./bucket.ts"; // decimal, as the S3 API counts a volume's size

const run = promisify(execFile);

export const diskImage = (dataDir: string, id: string) => join(dataDir, "volume-disks", `${id}.ext4`);

let support: { ok: true } | { ok: false; why: string } | undefined;

/** Whether volumes can be images here; computed once (root, a loop device, the ext4 tools). */
export function diskSupport(): { ok: true } | { ok: false; why: string } {
  if (support) return support;
  const tools = ["mkfs.ext4", "e2fsck", "resize2fs", "losetup", "mount", "umount"];
  const missing = tools.filter((t) => !["/usr/sbin", "/sbin", "/usr/bin", "/bin"].some((d) => existsSync(join(d, t))));
  if (process.getuid?.() !== 0) support = { ok: false, why: "the platform does not run as root" };
  else if (!existsSync("/dev/loop-control")) support = { ok: false, why: "there is no /dev/loop-control" };
  else if (missing.length > 0) support = { ok: false, why: `${missing.join(", ")} missing (Debian: e2fsprogs, mount)` };
  else support = { ok: true };
  return support;
}

/** Whether `dir` is a mount point (its device differs from its parent's). */
function mounted(dir: string): boolean {
  try {
    return statSync(dir).dev !== statSync(dirname(dir)).dev;
  } catch {
    return false;
  }
}

async function mountImage(image: string, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o777 });
  // nosuid,nodev: a worker's files on the volume are data, never a way to a device or root.
  await run("mount", ["-t", "ext4", "-o", "loop,nosuid,nodev", image, dir]);
  await chmod(dir, 0o777); // the workers that mount it may run as another user than the platform
  await rmdir(join(dir, "lost+found")).catch(() => undefined); // not the volume's: e2fsck makes it again when needed
}

/** Makes a volume's image of `sizeGb` and mounts it at `dir`. */
export async function createDisk(dataDir: string, id: string, sizeGb: number, dir: string): Promise<void> {
  const image = diskImage(dataDir, id);
  await mkdir(dirname(image), { recursive: true, mode: 0o700 });
  const file = await open(image, "wx", 0o600);
  try {
    await file.truncate(sizeGb * GB); // sparse: blocks come as they are written
  } finally {
    await file.close();
  }
  try {
    // -m 0: no blocks kept back for root (the platform writes as root and must meet the same size).
    await run("mkfs.ext4", ["-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", image]);
    await mountImage(image, dir);
  } catch (error) {
    await rm(image, { force: true });
    throw error;
  }
}

/** Platform start: mounts the volume's image at `dir`, grown first to `sizeGb` where a resize was left for now (`growDisk`). */
async function remountDisk(dataDir: string, id: string, sizeGb: number, dir: string): Promise<void> {
  const image = diskImage(dataDir, id);
  if (!existsSync(image) || mounted(dir)) return;
  if ((await stat(image)).size < sizeGb * GB && (await loopDevices(image)).length === 0) await growOffline(image, sizeGb * GB);
  await mountImage(image, dir);
}

/** Unmounts `dir` (the loop device goes with it); lazily when a process still holds a file there. */
export async function unmountDisk(dir: string): Promise<void> {
  if (!mounted(dir)) return;
  await run("umount", [dir]).catch(() => run("umount", ["-l", dir]));
}

async function setImageSize(image: string, bytes: number): Promise<void> {
  const file = await open(image, "r+");
  try {
    await file.truncate(bytes);
  } finally {
    await file.close();
  }
}

/** The loop devices the image is on (none once every mount of it, in any namespace, is gone). */
async function loopDevices(image: string): Promise<string[]> {
  const { stdout } = await run("losetup", ["-j", image]);
  return [...stdout.matchAll(/^(\/dev\/loop\d+):/gm)].map((m) => m[1]!);
}

/**
 * The loop devices still on the image once it was unmounted, waited for up to 2 s: the kernel, and an
 * exited worker's mount namespace, let go of the loop device a moment after the unmount or the process ends.
 */
async function loopsLeft(image: string): Promise<string[]> {
  let held = await loopDevices(image);
  for (let tries = 0; held.length > 0 && tries < 20; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    held = await loopDevices(image);
  }
  return held;
}

/** Grows an image no one has mounted (e2fsck first: resize2fs wants a checked file system). */
async function growOffline(image: string, bytes: number): Promise<void> {
  await setImageSize(image, bytes);
  // Exit 1 is "errors corrected" (e.g. a lost+found made again): only 2 and above stop the grow.
  await run("e2fsck", ["-f", "-p", image]).catch((error: { code?: number }) => (error.code === 1 ? undefined : Promise.reject(error)));
  await run("resize2fs", [image]);
}

/**
 * Grows a mounted volume's image to `sizeGb`, keeping its files; never shrinks it. Online (resize2fs on
 * the mounted loop device) where the platform holds CAP_SYS_RESOURCE; else `release()` stops what
 * holds the volume (its endpoints' workers, which start again on demand), and the image is unmounted,
 * grown and mounted again. Returns false when something still held it: the size is then the S3 API's
 * until the next platform start grows the image (`mountDisks`).
 */
export async function growDisk(dataDir: string, id: string, sizeGb: number, dir: string, release: () => Promise<void>): Promise<boolean> {
  const image = diskImage(dataDir, id);
  if (!existsSync(image) || (await stat(image)).size >= sizeGb * GB) return true;
  const [device] = await loopDevices(image);
  if (device) {
    await setImageSize(image, sizeGb * GB);
    await run("losetup", ["-c", device]);
    if (
      await run("resize2fs", [device]).then(
        () => true,
        () => false,
      )
    )
      return true;
  }
  await release();
  await unmountDisk(dir);
  const held = await loopsLeft(image);
  if (held.length > 0) {
    await run("mount", ["-t", "ext4", "-o", "nosuid,nodev", held[0]!, dir]); // the same file system again, never a second one on the image
    return false;
  }
  try {
    await growOffline(image, sizeGb * GB);
  } finally {
    await mountImage(image, dir);
  }
  return true;
}

/** Unmounts and removes a volume's image (the volume is being deleted). */
export async function deleteDisk(dataDir: string, id: string, dir: string): Promise<void> {
  await unmountDisk(dir);
  await rm(diskImage(dataDir, id), { force: true });
}

type VolumeAt = { id: string; sizeGb: number; dir: string };

/** Platform start: mounts the images of `volumes`, and says once when volumes cannot be images here. */
export async function mountDisks(dataDir: string, volumes: VolumeAt[], log: (line: string) => void): Promise<void> {
  const s = diskSupport();
  if (!s.ok) {
    log(
      `volumes are plain folders: ${s.why}, so a volume's size holds for the S3 API but not for workers writing through /platform-volume (docs/volumes.md, "Size")`,
    );
    return;
  }
  for (const v of volumes)
    await remountDisk(dataDir, v.id, v.sizeGb, v.dir).catch((error) => log(`volume ${v.id}: its image did not mount: ${(error as Error).message}`));
}

/** Platform close: unmounts every volume's image, so no mount or loop device outlives the platform (its close waits for them to go). */
export async function unmountDisks(dataDir: string, volumes: VolumeAt[], log: (line: string) => void): Promise<void> {
  for (const v of volumes) {
    const image = diskImage(dataDir, v.id);
    await unmountDisk(v.dir)
      .then(async () => {
        const held = existsSync(image) ? await loopsLeft(image) : [];
        if (held.length > 0) log(`${held.join(", ")} still on ${image} after 2 s`);
      })
      .catch((error) => log(`${v.dir} did not unmount: ${(error as Error).message}`));
  }
}
