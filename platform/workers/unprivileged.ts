/**
 * Workers without the sandbox on a platform run as root: they run as `nobody`, never as root. That
 * user must reach the unpacked builds (and flags mode's package links) but nothing else of the
 * state folder: the folder becomes traversable only (0711), `builds/` and `images/` readable, and
 * every other entry (platform.db, api-key, artifacts, files, logs) the owner's alone.
 * docs/platform.md, "Threat model".
 */
import { chmod, readdir } from "node:fs/promises";
import { join } from "node:path";

export const UNPRIVILEGED = { name: "nobody", uid: 65534, gid: 65534 } as const;

/** What an unprivileged worker must read. */
const SHARED = new Set(["builds", "images"]);

const done = new Map<string, Promise<void>>();

/** Once per state folder: the modes above. */
export function exposeBuildsTo(stateDir: string): Promise<void> {
  let pending = done.get(stateDir);
  if (!pending) {
    pending = (async () => {
      await chmod(stateDir, 0o711);
      for (const entry of await readdir(stateDir, { withFileTypes: true })) {
        const path = join(stateDir, entry.name);
        if (SHARED.has(entry.name)) await chmod(path, 0o755);
        else if (entry.isDirectory()) await chmod(path, 0o700);
        else if (entry.isFile()) await chmod(path, 0o600);
      }
    })();
    done.set(stateDir, pending);
  }
  return pending;
}
