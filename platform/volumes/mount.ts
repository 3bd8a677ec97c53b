/**
 * A worker's view of its endpoint's network volume: the volume's folder, bound read-write at
 * /platform-volume inside the sandbox. Without the sandbox (flags mode) nothing can be mounted
 * there: the worker gets the folder's real path in PLATFORM_VOLUME_PATH, and env values the endpoint
 * set under /platform-volume are rewritten to it (docs/volumes.md, "In the workers").
 */
import { existsSync } from "node:fs";
import { chown, stat } from "node:fs/promises";
import type { EndpointRecord, Store } from "../store/index.ts";
import { volumeDir } from "./paths.ts";

export const VOLUME_MOUNT_PATH = "/platform-volume";

/** The host folder of the endpoint's volume, if it has one that exists. */
export function volumeFolderOf(store: Store, dataDir: string, endpoint: EndpointRecord): string | undefined {
  const volume = endpoint.networkVolumeId ? store.volumes.get(endpoint.networkVolumeId) : undefined;
  const dir = volume && volumeDir(dataDir, volume.id);
  return dir && existsSync(dir) ? dir : undefined;
}

/** The worker's env for a volume seen at `seenAt` (VOLUME_MOUNT_PATH in the sandbox, the host folder without). */
export function volumeEnv(env: NodeJS.ProcessEnv, seenAt: string): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env, PLATFORM_VOLUME_PATH: seenAt };
  if (seenAt === VOLUME_MOUNT_PATH) return out;
  for (const [key, value] of Object.entries(env)) {
    if (value === VOLUME_MOUNT_PATH || value?.startsWith(`${VOLUME_MOUNT_PATH}/`)) out[key] = seenAt + value.slice(VOLUME_MOUNT_PATH.length);
  }
  return out;
}

/**
 * A platform run as root: the volume's folder becomes the first app's worker user's that mounts it
 * (while root's), so that user owns what it makes there; the folder stays open to all (0777) for
 * the workers of other apps sharing the volume.
 */
export async function giveVolumeTo(dir: string, user: { uid: number; gid: number }): Promise<void> {
  if ((await stat(dir)).uid === 0) await chown(dir, user.uid, user.gid);
}
