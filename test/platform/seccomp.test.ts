/**
 * The workers' seccomp program (platform/workers/seccomp.ts) installed by a real bwrap, as the
 * platform installs it: Python calls the refused syscalls through ctypes and gets EPERM, while
 * what workers do (threads, subprocesses, sockets, files in /tmp) keeps working.
 */
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { REFUSED_SYSCALLS, seccompProgram } from "../../platform/workers/seccomp.ts";
import { bwrapUsable, hardeningArgs, NO_TERMINAL_ARGS, SECCOMP_FD, probeUser, asUser, spawnBwrap } from "../../platform/workers/sandbox.ts";

const PROBE = `
import ctypes, json, os, socket, subprocess, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sys_call(nr, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return "ok" if result >= 0 else os.strerror(ctypes.get_errno())
out = {name: sys_call(nr, -1, 0, 0, 0) for name, nr in json.loads(sys.argv[1]).items()}
out["unshare(CLONE_NEWUSER)"] = sys_call(272, 0x10000000)
out["unshare(CLONE_FILES)"] = sys_call(272, 0x400)
out["clone3"] = sys_call(435, 0, 0)
out["ioctl(TIOCSTI)"] = sys_call(16, -1, 0x5412, 0)
out["ioctl(TIOCSTI, high bits set)"] = sys_call(16, -1, 0x100005412, 0)
out["ioctl(TIOCLINUX)"] = sys_call(16, -1, 0x541C, 0)
out["ioctl(TCGETS)"] = sys_call(16, -1, 0x5401, 0)
try:
    fd = os.open("/dev/tty", os.O_RDWR); out["/dev/tty"] = "a tty" if os.isatty(fd) else "not a tty"
except OSError as err:
    out["/dev/tty"] = err.strerror
t = threading.Thread(target=lambda: None); t.start(); t.join(); out["thread"] = "ok"
out["subprocess"] = subprocess.run(["/bin/sh", "-c", "echo ok"], capture_output=True, text=True).stdout.strip()
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.close(); out["socket"] = "ok"
open("/tmp/x", "w").write("x"); out["tmp"] = "ok"
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
out["Seccomp"] = status["Seccomp"].strip(); out["NoNewPrivs"] = status["NoNewPrivs"].strip(); out["CapEff"] = status["CapEff"].strip()
print(json.dumps(out))
`;

async function underFilter(): Promise<Record<string, string>> {
  const args = [
    "--die-with-parent",
    ...hardeningArgs(probeUser(), SECCOMP_FD),
    "--unshare-pid",
    "--ro-bind",
    "/",
    "/",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    ...NO_TERMINAL_ARGS,
    "--perms",
    "1777",
    "--tmpfs",
    "/tmp",
  ];
  const proc = spawnBwrap([...args, ...asUser(probeUser(), ["/usr/bin/python3", "-c", PROBE, JSON.stringify(REFUSED_SYSCALLS)])], { infoFd: false });
  let text = "";
  let err = "";
  proc.stdout!.on("data", (chunk: Buffer) => (text += chunk));
  proc.stderr!.on("data", (chunk: Buffer) => (err += chunk));
  const [code] = await once(proc, "exit");
  expect(code, err).toBe(0);
  return JSON.parse(text) as Record<string, string>;
}

describe("seccomp program", () => {
  it("is a whole number of 8-byte instructions, within classic BPF's jump range", () => {
    const program = seccompProgram("x64")!;
    expect(program.length % 8).toBe(0);
    expect(program.length / 8).toBeLessThan(4096);
    expect(seccompProgram("arm64")).toBeUndefined();
  });

  it.runIf(process.platform === "linux" && process.arch === "x64")(
    "under bwrap: every refused call answers EPERM, namespaces cannot be made, the terminal cannot be typed into, and threads, subprocesses, sockets and /tmp work",
    async () => {
      if (!(await bwrapUsable())) return expect.fail("bwrap is not usable here: scripts/setup.sh installs bubblewrap");
      const out = await underFilter();
      for (const name of Object.keys(REFUSED_SYSCALLS)) expect(out[name], name).toBe("Operation not permitted");
      expect(out["unshare(CLONE_NEWUSER)"]).toBe("Operation not permitted");
      expect(out["unshare(CLONE_FILES)"]).toBe("ok"); // flags without a namespace pass
      expect(out.clone3).toBe("Function not implemented"); // glibc falls back to clone, whose flags are checked
      // the terminal the worker may share with a foreground platform (no --new-session: sandbox.ts)
      expect(out["ioctl(TIOCSTI)"]).toBe("Operation not permitted");
      expect(out["ioctl(TIOCSTI, high bits set)"]).toBe("Operation not permitted");
      expect(out["ioctl(TIOCLINUX)"]).toBe("Operation not permitted");
      expect(out["ioctl(TCGETS)"]).toBe("Bad file descriptor"); // other requests reach the kernel
      expect(out["/dev/tty"]).not.toBe("a tty");
      expect(out).toMatchObject({ thread: "ok", subprocess: "ok", socket: "ok", tmp: "ok", Seccomp: "2", NoNewPrivs: "1", CapEff: "0000000000000000" });
    },
    30_000,
  );
});
