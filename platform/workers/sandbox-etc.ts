/**
 * The sandbox's own /etc, as a minimal image has it: the worker's user and group, localhost,
 * name lookups through files then DNS, and, shown from the host, what programs need to reach the
 * network and load libraries (resolv.conf, the CA certificates, ld.so.cache, the time zone,
 * services/protocols, the alternatives links into /usr). Nothing else of the host's /etc (no
 * shadow, no host keys, no credentials). Written under the state folder, bound read-only.
 * docs/platform.md, "Threat model".
 */
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";

const SANDBOX_USER = "worker";

/** Host entries of /etc shown read-only at the same path, when the host has them. */
const FROM_HOST = ["resolv.conf", "ssl/certs", "ssl/openssl.cnf", "ld.so.cache", "localtime", "services", "protocols", "alternatives"];

/** Writes `<stateDir>/sandbox/etc/<uid>` (the worker's user: its app's where the platform runs as root) and answers its folder and the host entries to bind into it. */
export function writeSandboxEtc(stateDir: string, uid: number, gid: number): { dir: string; binds: string[] } {
  const dir = join(stateDir, "sandbox", "etc", String(uid));
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const user = uid === 0 ? "root" : SANDBOX_USER;
  const files: Record<string, string> = {
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\n${uid === 0 ? "" : `${user}:x:${uid}:${gid}:svc worker:/tmp:/usr/sbin/nologin\n`}nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\n${gid === 0 ? "" : `${user}:x:${gid}:\n`}nogroup:x:65534:\n`,
    hosts: `127.0.0.1\tlocalhost ${hostname()}\n::1\tlocalhost ip6-localhost ip6-loopback\n`,
    "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n",
    hostname: `${hostname()}\n`,
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text, { mode: 0o644 });
  const binds: string[] = [];
  for (const entry of FROM_HOST) {
    const host = join("/etc", entry);
    if (!existsSync(host)) continue;
    const mountPoint = join(dir, entry);
    // bwrap binds onto an existing point of the read-only /etc: make it here
    if (statSync(host).isDirectory()) mkdirSync(mountPoint, { recursive: true });
    else {
      mkdirSync(join(mountPoint, ".."), { recursive: true });
      if (!existsSync(mountPoint)) writeFileSync(mountPoint, "");
    }
    binds.push(host);
  }
  return { dir, binds };
}
