/** File helpers of the built-in plugins. */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";

/** What writeIfChanged asks of the run's file index (plugins/_file-index.ts's FileIndex). */
export interface WrittenFiles {
  holds(path: string, sha256: string): Promise<boolean>;
  record(path: string, sha256: string, writtenAt: number): Promise<void>;
}

/**
 * Writes only when the content differs (creating the folder if needed); answers whether it wrote.
 * An unchanged file keeps its mtime, which the dev server relies on. With the run's file index, a
 * file the index vouches for (same stat, same hash) is not even read. The files are small generated
 * ones (handlers, the manifest, requirements.txt): read and written synchronously, as readSmallText.
 */
export async function writeIfChanged(file: string, content: string, index?: WrittenFiles): Promise<boolean> {
  const sha256 = index ? createHash("sha256").update(content).digest("hex") : "";
  if (index && (await index.holds(file, sha256))) return false;
  const current = readSmallText(file);
  const startedAt = Date.now();
  const wrote = current !== content;
  if (wrote) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
  await index?.record(file, sha256, startedAt);
  return wrote;
}

/**
 * A small file's text (a cache under .svc/cache/, an ignore file), or undefined when it cannot be
 * read. Synchronous on purpose: fs.promises.readFile makes four trips through libuv's thread pool
 * (open, stat, read, close) and each can wait milliseconds for a busy CPU, while the read itself
 * takes microseconds (docs/manifest.md, "File index").
 */
export function readSmallText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * A cache file's JSON object (read with readSmallText), or undefined when it is missing, unreadable
 * or not a JSON object: a cache that cannot be read is started afresh. The caller checks its fields.
 */
export function readCacheJson<T extends object>(file: string): Partial<T> | undefined {
  const text = readSmallText(file);
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null ? (value as Partial<T>) : undefined;
  } catch {
    return undefined;
  }
}

/** Writes through a temporary file and a rename, so a reader never sees half a file (the caches under .svc/cache/). */
export async function writeFileAtomically(file: string, content: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const temporary = `${file}.tmp-${process.pid}`;
  await writeFile(temporary, content);
  await rename(temporary, file);
}
