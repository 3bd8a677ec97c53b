/**
 * A warm spare's build folder (./warm-spares.ts): an empty folder bound read-only at the sandbox's
 * /app when the spare starts, filled with one build when a worker claims it. A bind mount shows the
 * folder itself, so what the platform puts in it on the host appears inside. Filled with hard links
 * to the unpacked build (same file system: the platform's state folder), a copy where a link cannot
 * be made; symlinks are made again as they are (unpacking checked that they stay in the build).
 */
import { chmodSync, copyFileSync, linkSync, mkdirSync, readdirSync, readlinkSync, statSync, symlinkSync } from "node:fs";
import { chmod, mkdir } from "node:fs/promises";
import { join } from "node:path";

/**
 * Entries put in place between two turns of the event loop: a dev app's build goes in one turn
 * (its claim waited ~10 ms on the async calls' turns), a dependency tree of thousands of files
 * holds the platform's other work up for a few milliseconds at a time.
 */
const ENTRIES_PER_TURN = 500;

/** Makes the empty folder a spare's sandbox shows at /app (any user of the sandbox may enter it). */
export async function makeStage(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await chmod(dir, 0o755);
}

/** Puts the build in `buildDir` into the (empty) stage `dir`, keeping the folders' modes. */
export async function fillStage(buildDir: string, dir: string): Promise<void> {
  const folders: Array<[from: string, to: string]> = [[buildDir, dir]];
  const modes: Array<[folder: string, mode: number]> = [];
  let placed = 0;
  for (let next = folders.pop(); next; next = folders.pop()) {
    const [from, to] = next;
    for (const entry of readdirSync(from, { withFileTypes: true })) {
      const source = join(from, entry.name);
      const target = join(to, entry.name);
      if (entry.isDirectory()) {
        mkdirSync(target);
        folders.push([source, target]);
        modes.push([target, statSync(source).mode & 0o7777]);
      } else if (entry.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
      else {
        try {
          linkSync(source, target);
        } catch {
          copyFileSync(source, target);
        }
      }
      if (++placed % ENTRIES_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
    }
  }
  for (const [folder, mode] of modes) chmodSync(folder, mode); // once filled: a read-only folder takes no entry
}
