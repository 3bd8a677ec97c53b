/**
 * The machine's GPUs as the platform sees them: the devices, and the machine that lists them (a
 * stand-in in tests, handed in through the options; workers/gpu-assign.ts asks it).
 */

export interface GpuDevice {
  /** nvidia-smi's index: the N of /dev/nvidia<N>. */
  index: number;
  uuid: string;
  name: string;
  memoryMiB: number;
}

/** The machine's side (a fake in tests: no GPU can exist on the test machines). */
export interface GpuMachine {
  gpus(): Promise<GpuDevice[]>;
  libraryDirs(): Promise<string[]>;
  exists?(path: string): boolean;
}
