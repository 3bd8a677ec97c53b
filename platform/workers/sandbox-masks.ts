/**
 * The kernel's knobs out of a worker's reach, as the container runtimes people trust leave them
 * (runc's default `maskedPaths` and `readonlyPaths`): after the sandbox's own /proc is mounted, the
 * files that read the kernel's memory, keys and timers or trigger it are masked by /dev/null (bound
 * nodev: nothing opens), folders of hardware and drivers by an empty read-only tmpfs, and /proc/sys
 * with the rest of runc's list bound read-only over itself (a worker's uid could not write them
 * anyway: this is the second wall). Only what this kernel has is named (the sandbox's /proc cannot
 * grow a mount point). docs/platform.md, "Threat model".
 */
import { existsSync, statSync } from "node:fs";

/** Masked: unreadable. */
const MASKED = [
  "/proc/acpi",
  "/proc/asound",
  "/proc/kcore",
  "/proc/keys",
  "/proc/key-users",
  "/proc/latency_stats",
  "/proc/timer_list",
  "/proc/timer_stats",
  "/proc/sched_debug",
  "/proc/scsi",
  "/proc/sysrq-trigger",
];
/** Read-only (readable: programs read /proc/sys, /proc/bus/pci). */
const READ_ONLY = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys"];
/** Under a GPU worker's read-only /sys: the firmware's tables and the power-capping counters (an energy side channel). */
const SYS_MASKED = ["/sys/firmware", "/sys/devices/virtual/powercap"];

function maskArgs(path: string): string[] {
  if (!existsSync(path)) return [];
  if (statSync(path).isDirectory()) return ["--tmpfs", path, "--remount-ro", path];
  return ["--ro-bind", "/dev/null", path];
}

let proc: string[] | undefined;

/** bwrap's options after `--proc /proc`: what this host's /proc has of the lists above. */
export function kernelMaskArgs(): string[] {
  proc ??= [...MASKED.flatMap(maskArgs), ...READ_ONLY.filter((p) => existsSync(p)).flatMap((p) => ["--ro-bind", p, p])];
  return proc;
}

/** bwrap's options after `--ro-bind /sys /sys`. */
export const sysMaskArgs = (): string[] => SYS_MASKED.flatMap(maskArgs);
