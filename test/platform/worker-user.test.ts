/**
 * No root anywhere (issue 35), end to end on a real platform run as root, bwrap present: two apps'
 * deployed functions each create a file in their volume and in their /tmp, and the host reads the
 * owner (each app's own uid from the pool, never 0, two apps two uids; what the S3 API puts in a
 * folder of theirs is theirs too, and they change it in place); a function opens every
 * host sysctl for writing (open only: nothing is written) and every open is refused; the kernel's
 * knobs runc masks read as nothing; /proc/net/unix names no host path.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { bwrapUsable } from "../../platform/workers/sandbox.ts";
import { DEFAULT_WORKER_UIDS } from "../../platform/workers/uid-pool.ts";
import { buildAppArtifact, saveImageEndpoint } from "./_app-artifact.ts";
import { api, gqlOk, startTestPlatform, uploadArtifact, waitFinal, type TestPlatform } from "./_support.ts";

const asRoot = process.getuid?.() === 0;

/** Files in its volume, its /tmp and its /dev/shm (multiprocessing's shared memory), and what it sees of itself. */
const OWNER = `import multiprocessing
import os

from svc import Endpoint


@Endpoint(name="owner")
def owner(name: str, append: str = "") -> dict:
    if append:  # a file the S3 API put into its folder: changed in place
        with open(append, "a", encoding="utf-8") as f:
            f.write(" and the worker")
    for path in (f"/platform-volume/{name}", f"/tmp/{name}"):
        with open(path, "w", encoding="utf-8") as f:
            f.write(name)
    os.makedirs(f"/platform-volume/{name}-dir", exist_ok=True)
    shared = multiprocessing.Value("i", 7)  # an arena file in /dev/shm, as the hosted SDK's worker makes
    return {"uid": os.getuid(), "euid": os.geteuid(), "shared": shared.value}
`;

/** Opens (never writes) every file under /proc/sys for writing, reads the masked files, lists the masked folders. */
const KNOBS = `import os

from svc import Endpoint


def opened_for_writing(root):
    opened, refused = [], 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                refused += 1
                continue
            os.close(fd)  # opened, nothing written
            opened.append(path)
    return opened, refused


def read(path):
    try:
        with open(path, "rb") as f:
            return len(f.read(4096))
    except OSError as err:
        return err.strerror


@Endpoint(name="knobs")
def knobs(host_paths: list) -> dict:
    opened, refused = opened_for_writing("/proc/sys")
    extra = {}
    for path in ("/proc/sysrq-trigger", "/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches"):
        try:
            os.close(os.open(path, os.O_WRONLY))
            extra[path] = "opened"
        except OSError as err:
            extra[path] = err.strerror
    masked = {p: read(p) for p in ("/proc/kcore", "/proc/keys", "/proc/key-users", "/proc/timer_list", "/proc/sched_debug") if os.path.lexists(p)}
    folders = {p: os.listdir(p) for p in ("/proc/acpi", "/proc/scsi", "/proc/asound") if os.path.isdir(p)}
    unix = open("/proc/net/unix", encoding="utf-8").read()
    return {
        "opened": opened,
        "refused": refused,
        "extra": extra,
        "masked": masked,
        "folders": folders,
        "unix names host paths": [p for p in host_paths if p in unix],
        "unix lines": len(unix.splitlines()) - 1,
        "unix": unix[:3000],
    }
`;

describe.runIf(process.platform === "linux")("a worker is an unprivileged host user", () => {
  let p: TestPlatform;
  let s3: S3Client;
  beforeAll(async () => {
    p = await startTestPlatform();
    const creds = (await gqlOk(p, "{ s3Credentials { endpointUrl accessKeyId secretAccessKey } }")).s3Credentials;
    s3 = new S3Client({ endpoint: creds.endpointUrl, forcePathStyle: true, region: "local", credentials: creds, maxAttempts: 1 });
  }, 60_000);
  afterAll(async () => {
    await p?.dispose();
  });

  const deployApp = async (app: string, file: string, code: string, name: string, volumeId?: string) => {
    const artifact = await buildAppArtifact({ "app/__init__.py": "", [`app/${file}.py`]: code }, [{ name, module: `app.${file}`, functions: [name] }]);
    const { appId, buildId } = await uploadArtifact(p, artifact, app);
    const endpoint = await saveImageEndpoint(p, buildId, { name, ...(volumeId ? { networkVolumeId: volumeId } : {}) } as never);
    return { appId, endpoint };
  };
  const run = async (endpointId: string, input: unknown) => {
    const r = await api(p, "POST", `/v2/${endpointId}/runsync`, { input });
    const out = r.body.status === "COMPLETED" || r.body.status === "FAILED" ? r.body : await waitFinal(p, endpointId, r.body.id, 120_000);
    expect(out.status, JSON.stringify(out).slice(0, 2000)).toBe("COMPLETED");
    return out.output;
  };

  it.runIf(asRoot)(
    "each app's files, in its volume and its /tmp, belong to its own pool uid on the host: not 0, not the other app's",
    async () => {
      if (!(await bwrapUsable())) return expect.fail("bwrap is not usable here: scripts/setup.sh installs bubblewrap");
      const seen: Array<{ appId: string; uid: number }> = [];
      for (const app of ["tenant-a", "tenant-b"]) {
        const { createNetworkVolume: vol } = await gqlOk<{ createNetworkVolume: { id: string } }>(
          p,
          "mutation ($i: CreateNetworkVolumeInput!) { createNetworkVolume(input: $i) { id } }",
          { i: { name: `${app}-data`, size: 1 } },
        );
        const { appId, endpoint } = await deployApp(app, "owner", OWNER, "owner", vol.id);
        const inside = await run(endpoint.id, { name: `${app}.txt` });
        const volume = join(p.dataDir, "volumes", vol.id);
        const file = statSync(join(volume, `${app}.txt`));
        const folder = statSync(join(volume, `${app}.txt-dir`));
        // its /tmp is a tmpfs of its own: read from the host through its process's root
        const worker = p.context.supervisor.forEndpoint(endpoint.id).find((w) => w.pid)!;
        const tmp = statSync(`/proc/${worker.pid}/root/tmp/${app}.txt`);
        expect(file.uid, "its volume file's owner").not.toBe(0);
        expect(file.gid).not.toBe(0);
        expect([folder.uid, tmp.uid, inside.uid, inside.euid]).toEqual([file.uid, file.uid, file.uid, file.uid]);
        expect(inside.shared, "POSIX shared memory works for the pool user").toBe(7);
        expect(file.uid).toBeGreaterThanOrEqual(DEFAULT_WORKER_UIDS.first);
        expect(file.uid).toBeLessThanOrEqual(DEFAULT_WORKER_UIDS.last);
        expect((await p.context.supervisor.uids!.userFor(appId)).uid).toBe(file.uid);
        // what the S3 API puts into a folder the worker made is the worker's user's: the worker changes it in place
        await s3.send(new PutObjectCommand({ Bucket: vol.id, Key: `${app}.txt-dir/from-s3.txt`, Body: "from S3" }));
        const put = join(volume, `${app}.txt-dir`, "from-s3.txt");
        expect(statSync(put).uid, "the S3 API's file's owner").toBe(file.uid);
        await run(endpoint.id, { name: `${app}.txt`, append: `/platform-volume/${app}.txt-dir/from-s3.txt` });
        expect(readFileSync(put, "utf8")).toBe("from S3 and the worker");
        seen.push({ appId, uid: file.uid });
      }
      expect(seen[0]!.uid, "two apps, two users").not.toBe(seen[1]!.uid);
      // the claims are host-wide: this platform's apps hold theirs
      const claims = readdirSync("/var/lib/svc/worker-uids");
      for (const { uid } of seen) expect(claims).toContain(String(uid));
    },
    240_000,
  );

  it("cannot open one host sysctl for writing; the kernel's masked files read as nothing; /proc/net/unix names no host path", async () => {
    if (!(await bwrapUsable())) return expect.fail("bwrap is not usable here: scripts/setup.sh installs bubblewrap");
    const { endpoint } = await deployApp("tenant-knobs", "knobs", KNOBS, "knobs");
    const hostPaths = [join(p.dataDir, "run"), p.dataDir];
    const out = await run(endpoint.id, { host_paths: hostPaths });
    expect(out.opened, `opened for writing: ${out.opened.slice(0, 20).join(", ")}`).toEqual([]);
    expect(out.refused).toBeGreaterThan(100); // it did walk /proc/sys
    for (const [path, got] of Object.entries(out.extra)) expect(got, path).not.toBe("opened");
    for (const [path, got] of Object.entries(out.masked)) expect([0, "Permission denied"], `${path}: ${got}`).toContain(got);
    expect(Object.keys(out.masked)).toEqual(expect.arrayContaining(["/proc/keys", "/proc/timer_list"]));
    for (const [path, entries] of Object.entries(out.folders)) expect(entries, path).toEqual([]);
    expect(out["unix names host paths"], out.unix).toEqual([]);
  }, 240_000);
});
