/**
 * The seccomp filter of a sandboxed worker, in the spirit of Docker's default profile: a classic
 * BPF program (bytes, built here: no libseccomp) that bwrap installs with `--seccomp <fd>` just
 * before it runs the worker. It refuses (EPERM) the calls that reach past the sandbox's walls:
 * handle-based opens, mounts, tracing other processes, new namespaces, keyrings, eBPF, kernel
 * modules, the clocks, swap, reboot, typing into a terminal (TIOCSTI). Everything else is allowed.
 * Only x86_64 syscalls pass: the i386 and x32 ABIs (other syscall tables, other numbers) are
 * refused as a whole.
 * docs/platform.md, "Threat model".
 */

/** x86_64 numbers (asm/unistd_64.h) of the refused calls; the list docs/platform.md shows. */
export const REFUSED_SYSCALLS: Readonly<Record<string, number>> = {
  // files outside the sandbox's view, by handle
  open_by_handle_at: 304,
  name_to_handle_at: 303,
  // mounts (a remount rw of the image or the artifact) and changes of root
  mount: 165,
  umount2: 166,
  pivot_root: 155,
  chroot: 161,
  mount_setattr: 442,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  // other processes' memory
  ptrace: 101,
  process_vm_readv: 310,
  process_vm_writev: 311,
  kcmp: 312,
  // namespaces (unshare and clone with CLONE_NEW* flags are refused by their flags below)
  setns: 308,
  // the kernel's keyrings, eBPF, performance counters, userfaultfd, io_uring
  keyctl: 250,
  add_key: 248,
  request_key: 249,
  bpf: 321,
  perf_event_open: 298,
  userfaultfd: 323,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  // kernel modules and kexec
  init_module: 175,
  finit_module: 313,
  delete_module: 176,
  create_module: 174,
  get_kernel_syms: 177,
  query_module: 178,
  kexec_load: 246,
  kexec_file_load: 320,
  // the clocks
  clock_settime: 227,
  settimeofday: 164,
  adjtimex: 159,
  clock_adjtime: 305,
  // the machine
  swapon: 167,
  swapoff: 168,
  reboot: 169,
  acct: 163,
  quotactl: 179,
  quotactl_fd: 443,
  sethostname: 170,
  setdomainname: 171,
  iopl: 172,
  ioperm: 173,
  vhangup: 153,
  syslog: 103,
  lookup_dcookie: 212,
  nfsservctl: 180,
  uselib: 134,
  _sysctl: 156,
};

const SYS_CLONE = 56;
const SYS_CLONE3 = 435;
const SYS_UNSHARE = 272;
const SYS_IOCTL = 16;
/** ioctl requests that type into or read from the terminal the worker may share with the platform (bwrap's --new-session is not used: ./sandbox.ts). */
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;
/** CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET */
const NEW_NAMESPACE_FLAGS = 0x7e020000;
const AUDIT_ARCH_X86_64 = 0xc000003e;
const X32_SYSCALL_BIT = 0x40000000;

// linux/filter.h, linux/seccomp.h
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
// struct seccomp_data
const NR = 0;
const ARCH = 4;
const ARG0_LOW = 16; // little-endian: the flags are the low 32 bits
const ARG1_LOW = 24; // ioctl's request: the kernel reads an unsigned int, so high bits set cannot slip past

interface Insn {
  code: number;
  jt?: string;
  jf?: string;
  k: number;
}

/** The program, with jumps to labels resolved (classic BPF jumps only forward, at most 255). */
function assemble(program: Array<Insn | string>): Buffer {
  const labels = new Map<string, number>();
  const insns: Insn[] = [];
  for (const item of program) {
    if (typeof item === "string") labels.set(item, insns.length);
    else insns.push(item);
  }
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach((insn, i) => {
    const offset = (label?: string) => {
      if (label === undefined) return 0;
      const to = labels.get(label);
      if (to === undefined || to <= i || to - i - 1 > 255) throw new Error(`seccomp: bad jump to ${label}`);
      return to - i - 1;
    };
    out.writeUInt16LE(insn.code, i * 8);
    out.writeUInt8(offset(insn.jt), i * 8 + 2);
    out.writeUInt8(offset(insn.jf), i * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
  });
  return out;
}

let program: Buffer | undefined;

/** The compiled filter (struct sock_filter[]) for an x86_64 host; undefined on another one. */
export function seccompProgram(arch: string = process.arch): Buffer | undefined {
  if (arch !== "x64") return undefined;
  program ??= assemble([
    { code: LD_W_ABS, k: ARCH },
    { code: JEQ_K, jf: "refuse", k: AUDIT_ARCH_X86_64 },
    { code: LD_W_ABS, k: NR },
    { code: JGE_K, jt: "refuse", k: X32_SYSCALL_BIT },
    ...Object.values(REFUSED_SYSCALLS).map((nr): Insn => ({ code: JEQ_K, jt: "refuse", k: nr })),
    { code: JEQ_K, jt: "enosys", k: SYS_CLONE3 }, // its flags sit behind a pointer: glibc then falls back to clone
    { code: JEQ_K, jt: "flags", k: SYS_CLONE },
    { code: JEQ_K, jt: "flags", k: SYS_UNSHARE },
    { code: JEQ_K, jt: "ioctl", k: SYS_IOCTL },
    { code: RET_K, k: RET_ALLOW },
    "flags",
    { code: LD_W_ABS, k: ARG0_LOW },
    { code: JSET_K, jt: "refuse", k: NEW_NAMESPACE_FLAGS },
    { code: RET_K, k: RET_ALLOW },
    "ioctl",
    { code: LD_W_ABS, k: ARG1_LOW },
    { code: JEQ_K, jt: "refuse", k: TIOCSTI },
    { code: JEQ_K, jt: "refuse", k: TIOCLINUX },
    { code: RET_K, k: RET_ALLOW },
    "refuse",
    { code: RET_K, k: RET_ERRNO | EPERM },
    "enosys",
    { code: RET_K, k: RET_ERRNO | ENOSYS },
  ]);
  return program;
}
