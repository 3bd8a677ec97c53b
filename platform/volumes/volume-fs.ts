/**
 * A volume's files as the S3 API reaches them: only through folder fds, one name at a time. Every
 * folder on a key's way is opened with O_NOFOLLOW|O_DIRECTORY inside the one above it, the object
 * itself with O_NOFOLLOW|O_NONBLOCK and then fstat()ed; mkdir, unlink, rename and listings act on
 * a name inside an open folder. A worker renaming or swapping its folders meanwhile (renameat2
 * RENAME_EXCHANGE with a symlink) changes which folder of the volume a name leads to, never leads
 * outside it (a folder cannot leave its mount by rename), and a FIFO, socket or device is refused,
 * never opened for I/O (that open would block one of libuv's four threads until a writer came).
 *
 * Node has no openat(2): `/proc/self/fd/<fd>/<name>` is the same lookup, since the kernel resolves
 * the magic link to the open folder itself, not to its path (no helper process, no native module).
 */
import { randomBytes } from "node:crypto";
import { constants, createReadStream, type Dirent, type Stats } from "node:fs";
import { chown, lstat, mkdir, open, readdir, rename, rmdir, stat, unlink, type FileHandle } from "node:fs/promises";
import { s3Errors } from "./s3-error.ts";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const FOLDER_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK;
const FILE_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;

/** The path that names `name` inside the open folder `dir` (no other folder on the way). */
export const inFolder = (dir: FileHandle, name: string) => `/proc/self/fd/${dir.fd}/${name}`;
/** The open folder itself, for readdir. */
const folderPath = (dir: FileHandle) => `/proc/self/fd/${dir.fd}`;

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException)?.code;

/** The volume's own folder (the platform made it: not a worker's name). */
export const openRoot = (root: string) => open(root, FOLDER_FLAGS);

/**
 * Who should own what the S3 API makes in `dir`: the folder's owner where that is a worker's user
 * (a platform run as root gives each app's workers a host user: ../workers/uid-pool.ts), so the
 * workers can change it in place; undefined where root owns the folder (nothing to change).
 */
async function ownerOf(dir: FileHandle): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const { uid, gid } = await dir.stat();
  return uid === 0 ? undefined : { uid, gid };
}

/** What stands at `name` in `dir`, without following it; undefined when nothing does. */
export const entryIn = (dir: FileHandle, name: string): Promise<Stats | undefined> =>
  lstat(inFolder(dir, name)).catch((error) => (codeOf(error) === "ENOENT" ? undefined : Promise.reject(error)));

/**
 * The folder `name` inside `dir`, opened; undefined when missing (made first when `create`).
 * A symlink or a file there is an S3 error naming `key`: the S3 API follows no link.
 */
export async function openFolderIn(dir: FileHandle, name: string, key: string, create: boolean): Promise<FileHandle | undefined> {
  let made = false;
  for (let tries = 0; ; tries++) {
    try {
      const folder = await open(inFolder(dir, name), FOLDER_FLAGS);
      const owner = made ? await ownerOf(dir) : undefined;
      if (owner) await folder.chown(owner.uid, owner.gid); // on the open folder: no name a worker could swap
      return folder;
    } catch (error) {
      const code = codeOf(error);
      if (code === "ENOENT" && create && tries < 3) {
        made = await mkdir(inFolder(dir, name)).then(
          () => true,
          (e) => (codeOf(e) === "EEXIST" ? false : Promise.reject(e)),
        );
        continue;
      }
      if (code === "ENOENT") return undefined;
      if (code !== "ENOTDIR" && code !== "ELOOP") throw error;
      const info = await entryIn(dir, name);
      if (info?.isSymbolicLink())
        throw s3Errors.accessDenied(`"${key}" passes through a symbolic link ("${name}"): the S3 API follows no link, so that a key stays in its volume.`);
      throw s3Errors.invalidKey(`"${name}" on the way to "${key}" is not a folder`);
    }
  }
}

/** A key's place: the open folder holding it and its last name; `close` lets go of every folder opened. */
export interface KeyPlace {
  /** The folders from the volume's root to the key's own (`folders[i + 1]` is `names[i]` in `folders[i]`). */
  folders: FileHandle[];
  names: string[];
  dir: FileHandle;
  name: string;
  close(): Promise<void>;
}

/**
 * Opens the folders of `segments` (a key's, from paths.ts keySegments) under the volume's root, making
 * them when `create`; undefined when one is missing. The last segment is the key's own name.
 */
export async function openPlace(root: string, segments: string[], key: string, create: boolean): Promise<KeyPlace | undefined> {
  const folders = [await openRoot(root)];
  const close = async () => {
    await Promise.all(folders.map((f) => f.close().catch(() => undefined)));
  };
  try {
    for (const name of segments.slice(0, -1)) {
      const next = await openFolderIn(folders[folders.length - 1]!, name, key, create);
      if (!next) {
        await close();
        return undefined;
      }
      folders.push(next);
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { folders, names: segments.slice(0, -1), dir: folders[folders.length - 1]!, name: segments[segments.length - 1]!, close };
}

/**
 * The regular file `name` in `dir`, open for reading, with its facts; undefined when nothing or a
 * symlink is there. A FIFO, socket or device is InvalidObjectState: opened non-blocking (a FIFO
 * then answers at once) and let go after fstat, or refused by open itself (a socket: ENXIO).
 */
export async function openObject(dir: FileHandle, name: string, key: string): Promise<{ file: FileHandle; info: Stats } | undefined> {
  let file: FileHandle;
  try {
    file = await open(inFolder(dir, name), FILE_FLAGS);
  } catch (error) {
    const code = codeOf(error);
    if (code === "ENOENT" || code === "ELOOP") return undefined;
    if (code === "ENXIO" || code === "EISDIR") throw notAnObject(key);
    throw error;
  }
  const info = await file.stat();
  if (info.isFile()) return { file, info };
  await file.close();
  if (info.isDirectory()) return undefined;
  throw notAnObject(key);
}

const notAnObject = (key: string) =>
  s3Errors.invalidObjectState(`"${key}" is not a regular file on the volume (a FIFO, socket or device a worker made): the S3 API does not open it.`);

/** Removes the file, symlink or (with `folder`) empty folder named `name` in `dir`; nothing there is no error. */
export async function removeIn(dir: FileHandle, name: string, folder: boolean): Promise<void> {
  const info = await entryIn(dir, name);
  if (!info) return;
  if (!info.isDirectory()) await unlink(inFolder(dir, name)).catch((e) => (codeOf(e) === "ENOENT" ? undefined : Promise.reject(e)));
  else if (folder) await rmdir(inFolder(dir, name)).catch(() => undefined);
}

/** Removes the key's folders that its removal left empty, deepest first (a name a worker swapped is at worst another empty folder of the volume). */
export async function pruneEmpty(place: KeyPlace): Promise<void> {
  for (let i = place.folders.length - 1; i >= 1; i--) {
    if ((await readdir(folderPath(place.folders[i]!)).catch(() => ["?"])).length > 0) return;
    await rmdir(inFolder(place.folders[i - 1]!, place.names[i - 1]!)).catch(() => undefined);
  }
}

export interface Entry {
  key: string;
  size: number;
  mtimeMs: number;
}

/** Every regular file under the open folder `dir` (whose key prefix is `rel`), as S3 keys, unsorted; links are not followed. */
export async function walkFolder(dir: FileHandle, rel: string, out: Entry[] = []): Promise<Entry[]> {
  const entries: Dirent[] = await readdir(folderPath(dir), { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    const key = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) {
      const sub = await open(inFolder(dir, e.name), FOLDER_FLAGS).catch(() => undefined); // swapped for a link meanwhile: skipped
      if (!sub) continue;
      try {
        await walkFolder(sub, key, out);
      } finally {
        await sub.close();
      }
    } else if (e.isFile()) {
      const info = await entryIn(dir, e.name).catch(() => undefined);
      if (info?.isFile()) out.push({ key, size: info.size, mtimeMs: Math.trunc(info.mtimeMs) });
    }
  }
  return out;
}

/** Deletes everything inside the open folder `dir`, never following a link (a volume's data on deletion). */
export async function emptyFolder(dir: FileHandle): Promise<void> {
  for (const e of await readdir(folderPath(dir), { withFileTypes: true }).catch(() => [] as Dirent[])) {
    const sub = e.isDirectory() ? await open(inFolder(dir, e.name), FOLDER_FLAGS).catch(() => undefined) : undefined;
    if (sub) {
      try {
        await emptyFolder(sub);
      } finally {
        await sub.close();
      }
      await rmdir(inFolder(dir, e.name)).catch(() => undefined);
    } else await unlink(inFolder(dir, e.name)).catch(() => undefined);
  }
}

/** Deletes a volume's folder with its data, following no link (a worker may still be swapping names in it). */
export async function deleteVolumeFolder(root: string): Promise<void> {
  for (let tries = 0; tries < 3; tries++) {
    const dir = await openRoot(root).catch(() => undefined);
    if (!dir) return;
    try {
      await emptyFolder(dir);
    } finally {
      await dir.close();
    }
    if (
      await rmdir(root).then(
        () => true,
        () => false,
      )
    )
      return;
  }
}

/**
 * Moves the platform's staged file `staged` to `name` in `dir`: a rename where both are on one file
 * system; where the volume is an image of its own (./volume-disk.ts: EXDEV), its bytes are copied into
 * a fresh name made with O_EXCL (a link a worker put there is refused, never followed), given the
 * staged file's times, and renamed to `name` inside `dir`. ENOSPC there is `tooLarge()`.
 */
export async function moveInto(staged: string, dir: FileHandle, name: string, tooLarge: () => Error): Promise<void> {
  const owner = await ownerOf(dir);
  if (owner) await chown(staged, owner.uid, owner.gid); // the platform's own staged file, before it enters the volume
  try {
    await rename(staged, inFolder(dir, name));
    return;
  } catch (error) {
    if (codeOf(error) !== "EXDEV") throw error;
  }
  const fresh = `.svc-incoming-${randomBytes(8).toString("hex")}`;
  try {
    const info = await stat(staged);
    const target = await open(inFolder(dir, fresh), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, 0o644);
    try {
      for await (const chunk of createReadStream(staged)) await target.write(chunk as Buffer);
      await target.utimes(info.atimeMs / 1000, info.mtimeMs / 1000); // seconds as numbers: a Date would round away the ms fraction
      if (owner) await target.chown(owner.uid, owner.gid);
    } finally {
      await target.close();
    }
    await rename(inFolder(dir, fresh), inFolder(dir, name));
  } catch (error) {
    await unlink(inFolder(dir, fresh)).catch(() => undefined);
    throw codeOf(error) === "ENOSPC" || codeOf(error) === "EDQUOT" ? tooLarge() : error;
  }
}
