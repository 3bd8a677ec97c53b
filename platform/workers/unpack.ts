/**
 * Safe artifact unpacking. Every entry is checked by us (not left to tar's defaults): no absolute
 * paths, no `..`, no device files or FIFOs, no links leaving the folder, nothing written through a
 * link. Checked once when the artifact is finalized (listing) and again while extracting; symlinks
 * are verified with realpath after extraction. A build unpacks once, into a temporary folder that
 * is renamed into place.
 */
import { list, extract } from "tar";
import { mkdir, readdir, realpath, rename, rm, lstat } from "node:fs/promises";
import { existsSync } from "node:fs";
import { dirname, join, posix, sep } from "node:path";
import { errors, SvcError } from "../../core/errors.ts";

const FILE_TYPES = new Set(["File", "OldFile", "ContiguousFile"]);

interface CheckState {
  links: Set<string>;
}

function normalizeEntryPath(raw: string): string {
  let p = raw;
  while (p.startsWith("./")) p = p.slice(2);
  return p.replace(/\/+$/, "");
}

function unsafePathReason(raw: string): string | undefined {
  if (raw.includes("\0")) return "NUL byte in the path";
  if (raw.startsWith("/") || /^[a-zA-Z]:/.test(raw) || raw.startsWith("\\")) return "absolute path";
  if (raw.split(/[\\/]+/).includes("..")) return "'..' in the path";
  return undefined;
}

/** Whether some ancestor folder of `path` is a link entry seen earlier (writing through a link). */
function throughLink(path: string, state: CheckState): boolean {
  for (let at = path.indexOf("/"); at > 0; at = path.indexOf("/", at + 1)) {
    if (state.links.has(path.slice(0, at))) return true;
  }
  return false;
}

/** Throws ARTIFACT_UNSAFE when the entry may not be unpacked. */
export function checkEntry(raw: string, type: string, linkpath: string | undefined, state: CheckState): void {
  const pathWhy = unsafePathReason(raw);
  if (pathWhy) throw errors.ARTIFACT_UNSAFE(raw, pathWhy);
  const path = normalizeEntryPath(raw);
  if (throughLink(path, state) || state.links.has(path)) throw errors.ARTIFACT_UNSAFE(raw, "it goes through or replaces a link");
  if (FILE_TYPES.has(type) || type === "Directory") return;
  if (type === "SymbolicLink") {
    const target = linkpath ?? "";
    if (!target) throw errors.ARTIFACT_UNSAFE(raw, "empty link target");
    if (target.startsWith("/") || /^[a-zA-Z]:/.test(target)) throw errors.ARTIFACT_UNSAFE(raw, `link to absolute path ${target}`);
    // Resolve step by step (not normalized first): `x/l/..` must not pass through the link x/l.
    const stack: string[] = [];
    const parts = [...posix.dirname(path).split("/"), ...target.split("/")];
    parts.forEach((part, i) => {
      if (part === "" || part === ".") return;
      if (part === "..") {
        if (stack.length === 0) throw errors.ARTIFACT_UNSAFE(raw, `link to ${target} escapes the folder`);
        stack.pop();
        return;
      }
      stack.push(part);
      if (i < parts.length - 1 && state.links.has(stack.join("/"))) throw errors.ARTIFACT_UNSAFE(raw, `link to ${target} goes through another link`);
    });
    state.links.add(path);
    return;
  }
  if (type === "Link") {
    const target = linkpath ?? "";
    const why = unsafePathReason(target);
    if (!target || why) throw errors.ARTIFACT_UNSAFE(raw, `hard link to ${target || "nothing"}${why ? `: ${why}` : ""}`);
    if (throughLink(`${normalizeEntryPath(target)}/`, state)) throw errors.ARTIFACT_UNSAFE(raw, `hard link to ${target} goes through a link`);
    return;
  }
  throw errors.ARTIFACT_UNSAFE(raw, `${type} entries are not allowed`);
}

/** Lists the artifact and throws ARTIFACT_UNSAFE on the first entry that may not be unpacked. */
export async function checkArtifact(file: string): Promise<{ entries: number }> {
  const state: CheckState = { links: new Set() };
  let failure: SvcError | undefined;
  let entries = 0;
  try {
    await list({
      file,
      strict: true,
      onReadEntry(entry) {
        entries++;
        if (failure) return;
        try {
          checkEntry(entry.path, entry.type, entry.linkpath, state);
        } catch (error) {
          failure = error as SvcError;
        }
      },
    });
  } catch (error) {
    throw failure ?? errors.ARTIFACT_UNSAFE(file, `not a readable .tar.gz (${(error as Error).message})`);
  }
  if (failure) throw failure;
  return { entries };
}

async function verifyLinks(root: string, dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isSymbolicLink()) {
      let real: string;
      try {
        real = await realpath(full);
      } catch {
        continue; // dangling: its target was checked lexically
      }
      if (real !== root && !real.startsWith(root + sep)) throw errors.ARTIFACT_UNSAFE(full.slice(root.length + 1), "link leaves the folder");
    } else if (entry.isDirectory()) {
      await verifyLinks(root, full);
    } else if (!entry.isFile()) {
      throw errors.ARTIFACT_UNSAFE(full.slice(root.length + 1), "not a regular file");
    }
  }
}

/** Extracts `file` into `dest` (which must not exist yet), checking every entry. */
export async function unpackArtifact(file: string, dest: string): Promise<void> {
  const tmp = `${dest}.tmp-${process.pid}-${Date.now()}`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  const state: CheckState = { links: new Set() };
  let failure: SvcError | undefined;
  try {
    await extract({
      file,
      cwd: tmp,
      strict: true,
      preservePaths: false,
      preserveOwner: false,
      noChmod: false,
      filter(path, entry) {
        if (failure) return false;
        const e = entry as { type?: string; linkpath?: string };
        try {
          checkEntry(path, e.type ?? "File", e.linkpath, state);
          return true;
        } catch (error) {
          failure = error as SvcError;
          return false;
        }
      },
    });
    if (failure) throw failure;
    const root = await realpath(tmp);
    await verifyLinks(root, root);
    if (existsSync(dest)) {
      await rm(tmp, { recursive: true, force: true });
      return;
    }
    await mkdir(dirname(dest), { recursive: true });
    await rename(tmp, dest);
  } catch (error) {
    await rm(tmp, { recursive: true, force: true });
    if (error instanceof SvcError) throw error;
    throw errors.ARTIFACT_UNSAFE(file, `could not unpack (${(error as Error).message})`);
  }
}

/** Unpacks each build once: concurrent callers share one extraction. */
export class BuildUnpacker {
  private readonly pending = new Map<string, Promise<string>>();

  constructor(private readonly buildsDir: string) {}

  dirOf(buildId: string): string {
    return join(this.buildsDir, buildId);
  }

  ensure(buildId: string, artifactFile: string): Promise<string> {
    const dest = this.dirOf(buildId);
    let p = this.pending.get(buildId);
    if (!p) {
      p = (async () => {
        const st = await lstat(dest).catch(() => undefined);
        if (st?.isDirectory()) return dest;
        await unpackArtifact(artifactFile, dest);
        return dest;
      })();
      p.catch(() => this.pending.delete(buildId));
      this.pending.set(buildId, p);
    }
    return p;
  }
}
