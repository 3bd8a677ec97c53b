/**
 * A warm spare's build folder (./warm-spares.ts): an empty folder bound read-only at the sandbox's
 * /app when the spare starts, filled with one build when a worker claims it. A bind mount shows the
 * folder itself, so what the platform puts in it on the host appears inside. Filled with hard links
 * to the unpacked build (same file system: the platform's state folder), a copy where a link cannot
 * be made; symlinks are made again as they are (unpacking checked that they stay in the build).
 */
import { chmod, copyFile, link, mkdir, readdir, readlink, stat, symlink } from "node:fs/promises";
import { join } from "node:path";

/** Makes the empty folder a spare's sandbox shows at /app (any user of the sandbox may enter it). */
export async function makeStage(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await chmod(dir, 0o755);
}

/** Puts the build in `buildDir` into the (empty) stage `dir`, keeping the folders' modes. */
export async function fillStage(buildDir: string, dir: string): Promise<void> {
  const entries = await readdir(buildDir, { withFileTypes: true });
  await Promise.all(
    entries.map(async (entry) => {
      const from = join(buildDir, entry.name);
      const to = join(dir, entry.name);
      if (entry.isDirectory()) {
        await mkdir(to);
        await fillStage(from, to);
        await chmod(to, (await stat(from)).mode & 0o7777);
      } else if (entry.isSymbolicLink()) await symlink(await readlink(from), to);
      else await link(from, to).catch(() => copyFile(from, to));
    }),
  );
}
