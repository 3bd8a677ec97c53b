/**
 * Worker users: where the platform runs as root, each app's workers (queue, LB, `svc shell`, here
 * and on Ray nodes) run as a host user of that app's own, never root and owner of nothing of the
 * platform, so a hole in the sandbox leaves an attacker an unprivileged stranger to the host and to
 * every other app. The uids come from a pool (`SVC_WORKER_UIDS`, default 200000-200999; gid = uid).
 * Which uid is whose is kept host-wide, one claim file per uid in CLAIMS_DIR holding the state
 * folder and the app: made with O_EXCL under a lock, so two platforms on one host never hand one
 * uid to two apps. A claim stays across restarts (the app's volume files keep their owner); one
 * whose state folder is gone is taken again. docs/platform.md, "Threat model".
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { errors } from "../../core/errors.ts";

/** The worker's host identity. */
export interface WorkerUser {
  uid: number;
  gid: number;
}

export interface UidRange {
  first: number;
  last: number;
}

export const DEFAULT_WORKER_UIDS: UidRange = { first: 200_000, last: 200_999 };
/** Host-wide: every platform on the host claims its apps' uids here. */
export const CLAIMS_DIR = "/var/lib/svc/worker-uids";
/** A lock older than this was left by a platform killed while it held it. */
const STALE_LOCK_MS = 10_000;

/** `SVC_WORKER_UIDS=first-last`: at least 1, above the system's users (1000) and below 2^31. */
export function parseUidRange(text: string | undefined): UidRange {
  if (text === undefined || text.trim() === "") return DEFAULT_WORKER_UIDS;
  const match = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(text);
  const range = match ? { first: Number(match[1]), last: Number(match[2]) } : undefined;
  if (!range || range.first < 1000 || range.last < range.first || range.last >= 2 ** 31) throw errors.WORKER_UIDS_INVALID(text);
  return range;
}

const claimText = (stateDir: string, appId: string) => `${stateDir}\t${appId}\n`;

export class WorkerUidPool {
  private readonly stateDir: string;
  private readonly known = new Map<string, WorkerUser>();

  constructor(
    stateDir: string,
    private readonly range: UidRange = DEFAULT_WORKER_UIDS,
    private readonly dir: string = CLAIMS_DIR,
  ) {
    this.stateDir = resolve(stateDir);
  }

  /** The app's user: its claim, or the first free uid of the range claimed for it. */
  async userFor(appId: string): Promise<WorkerUser> {
    const known = this.known.get(appId);
    if (known) return known;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    await this.lock();
    try {
      const uid = this.claimed(appId) ?? this.claim(appId);
      const user = { uid, gid: uid };
      this.known.set(appId, user);
      return user;
    } finally {
      rmdirSync(join(this.dir, ".lock"));
    }
  }

  private claimed(appId: string): number | undefined {
    const want = claimText(this.stateDir, appId);
    for (const name of readdirSync(this.dir)) {
      const uid = Number(name);
      if (!Number.isInteger(uid) || uid < this.range.first || uid > this.range.last) continue;
      if (readClaim(join(this.dir, name)) === want) return uid;
    }
    return undefined;
  }

  private claim(appId: string): number {
    for (let uid = this.range.first; uid <= this.range.last; uid++) {
      const file = join(this.dir, String(uid));
      const held = readClaim(file);
      if (held !== undefined && existsSync(held.split("\t")[0]!)) continue;
      if (held !== undefined) unlinkSync(file); // its platform's state folder is gone
      writeFileSync(file, claimText(this.stateDir, appId), { flag: "wx", mode: 0o600 });
      return uid;
    }
    throw errors.WORKER_UIDS_EXHAUSTED(`${this.range.first}-${this.range.last}`, this.dir);
  }

  /** The host-wide lock: a folder made atomically; one left by a killed platform is taken over. */
  private async lock(): Promise<void> {
    const lock = join(this.dir, ".lock");
    for (;;) {
      try {
        mkdirSync(lock, { mode: 0o700 });
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > STALE_LOCK_MS) rmSync(lock, { recursive: true, force: true });
      else await new Promise((done) => setTimeout(done, 5));
    }
  }
}

function readClaim(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}
