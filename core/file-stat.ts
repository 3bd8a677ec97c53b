/**
 * The stat that shows a change to a file or folder, and the racy-clean window: shared by the file
 * index and the listing cache (plugins/) and the build record (./build-record.ts), which must agree
 * on both (docs/manifest.md, "Racy-clean rule").
 */
import { statSync } from "node:fs";

/** Covers file systems with coarse timestamps (FAT: 2 s, ext3/HFS+: 1 s). */
export const RACY_WINDOW_MS = 2000;

export interface StatKey {
  size: number;
  mtimeNs: string;
  ctimeNs: string;
  ino: string;
  /** max(mtime, ctime) in ms. */
  changedMs: number;
}

/** Synchronous: one stat is a few microseconds, far less than a round trip through libuv's thread pool. */
export function statKey(path: string): StatKey {
  const info = statSync(path, { bigint: true });
  const changed = info.mtimeNs > info.ctimeNs ? info.mtimeNs : info.ctimeNs;
  return {
    size: Number(info.size),
    mtimeNs: String(info.mtimeNs),
    ctimeNs: String(info.ctimeNs),
    ino: String(info.ino),
    changedMs: Number(changed / 1_000_000n),
  };
}
