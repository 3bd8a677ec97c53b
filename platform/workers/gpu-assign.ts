/**
 * GPUs for the supervisor's workers: a GPU endpoint's worker (one with gpuIds) gets its gpuCount
 * GPUs from the machine's inventory (./gpus.ts) through the pool (./gpu-pool.ts), and with them what
 * its sandbox binds (their device nodes, the driver's library folders) and CUDA_VISIBLE_DEVICES.
 * On a machine without GPUs the worker runs as before, on the CPU, and the platform says so once.
 * The inventory is read once, when the first GPU worker starts or the status is asked for.
 * docs/platform.md, "GPUs".
 */
import { errors, type SvcError } from "../../core/errors.ts";
import type { EndpointRecord } from "../store/index.ts";
import type { GpuDevice, GpuMachine } from "../gpu-machine.ts";
import { cudaVisibleDevices, deviceNodes, queryDriverLibraryDirs, queryGpus } from "./gpus.ts";
import { GpuPool } from "./gpu-pool.ts";

/** What a worker holding GPUs gets (ImageEnvironments.launch puts it in the sandbox and the env). */
export interface GpuGrant {
  gpus: GpuDevice[];
  /** Device nodes bound into the sandbox (`--dev-bind`). */
  devices: string[];
  /** Folders of the driver's libraries: bound read-only where the sandbox does not show them, and on LD_LIBRARY_PATH. */
  libraryDirs: string[];
  env: { CUDA_VISIBLE_DEVICES: string };
}

const HOST_MACHINE: GpuMachine = { gpus: () => queryGpus(), libraryDirs: queryDriverLibraryDirs };

/** An endpoint's env entry that lets its workers share GPUs (with other sharing workers). */
export const SHARE_GPUS_ENV = "SVC_SHARE_GPUS";

export interface GpuStatus {
  gpus: Array<GpuDevice & { workers: Array<{ workerId: string; endpointId: string }> }>;
  waiting: Array<{ workerId: string; endpointId: string; count: number }>;
}

/**
 * The loader's own folders (/usr/lib/x86_64-linux-gnu, /lib64, ...): searched anyway, and put on
 * LD_LIBRARY_PATH they would come before the RUNPATH of the image's packages (torch's bundled libraries).
 */
const SYSTEM_LIBRARY_DIR = /^(\/usr)?\/lib(32|64|x32)?(\/[\w-]+-linux-gnu\w*)?$/;

/** The variables of a worker holding GPUs: which ones CUDA sees, and where the driver's libraries are. */
export function gpuEnv(grant: GpuGrant | undefined, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (!grant) return {};
  const path = [...grant.libraryDirs.filter((dir) => !SYSTEM_LIBRARY_DIR.test(dir)), ...(env.LD_LIBRARY_PATH?.split(":").filter(Boolean) ?? [])];
  return { ...grant.env, ...(path.length > 0 ? { LD_LIBRARY_PATH: [...new Set(path)].join(":") } : {}) };
}

export const CPU_ONLY_MESSAGE = "no NVIDIA GPU on this machine (nvidia-smi lists none): GPU endpoints' workers run on the CPU";

export class WorkerGpus {
  private pool?: Promise<GpuPool>;
  /** The pool once the inventory is read (for the synchronous /health view). */
  private known?: GpuPool;
  private libraries?: Promise<string[]>;
  private saidCpu = false;

  constructor(private readonly machine: GpuMachine = HOST_MACHINE) {}

  private inventory(): Promise<GpuPool> {
    this.pool ??= this.machine.gpus().then((gpus) => (this.known = new GpuPool(gpus)));
    return this.pool;
  }

  /** Does the machine have GPUs (the GPU image's Python is then one whose torch sees CUDA)? */
  async present(): Promise<boolean> {
    return (await this.inventory()).gpus.length > 0;
  }

  /**
   * The GPUs of a starting worker: undefined for a CPU endpoint, or where the machine has none.
   * Waits while they are held (saying so in `log`, once); throws GPUS_UNAVAILABLE when the endpoint
   * asks for more than the machine has, and when `gone()` before it got them. Without GPUs on the
   * machine, the first GPU worker's `log` says that they run on the CPU.
   */
  async assign(
    worker: { id: string; gone: () => boolean },
    endpoint: Pick<EndpointRecord, "id" | "name" | "gpuIds" | "gpuCount">,
    env: Record<string, string>,
    log: (line: string) => void,
  ): Promise<GpuGrant | undefined> {
    if (!endpoint.gpuIds) return undefined;
    const pool = await this.inventory();
    if (pool.gpus.length === 0) {
      if (!this.saidCpu) log(CPU_ONLY_MESSAGE);
      this.saidCpu = true;
      return undefined;
    }
    const tooMany = this.unavailable(endpoint);
    if (tooMany) throw tooMany;
    const count = endpoint.gpuCount ?? 1;
    this.libraries ??= this.machine.libraryDirs();
    const libraryDirs = await this.libraries;
    if (worker.gone()) throw new Error("stopped before it started");
    const request = { workerId: worker.id, endpointId: endpoint.id, count, shared: /^(1|true|yes)$/i.test(env[SHARE_GPUS_ENV] ?? "") };
    const gpus = await pool.acquire(request, (ahead) => {
      const held = pool.holdings().map((h) => `GPU ${h.gpu.index}: ${h.holders.map((r) => r.workerId).join(", ") || "free"}`);
      log(`worker ${worker.id} waits for ${count} free GPU(s) (${held.join("; ")}${ahead > 0 ? `; ${ahead} worker(s) waiting before it` : ""})`);
    });
    return { gpus, devices: deviceNodes(gpus, this.machine.exists), libraryDirs, env: { CUDA_VISIBLE_DEVICES: cudaVisibleDevices(gpus) } };
  }

  /** GPUS_UNAVAILABLE when the endpoint asks for more GPUs per worker than the machine has (known once the inventory is read). */
  unavailable(endpoint: Pick<EndpointRecord, "name" | "gpuIds" | "gpuCount">): SvcError | undefined {
    const machine = this.known?.gpus.length ?? 0;
    const count = endpoint.gpuCount ?? 1;
    return endpoint.gpuIds && machine > 0 && count > machine ? errors.GPUS_UNAVAILABLE(endpoint.name, count, machine) : undefined;
  }

  /** How many GPUs the machine has (0 before the inventory is read). */
  machineCount(): number {
    return this.known?.gpus.length ?? 0;
  }

  /** A worker stops before it started: it stops waiting for GPUs. */
  cancel(workerId: string): void {
    void this.pool?.then((pool) => pool.cancel(workerId));
  }

  /** A worker exited: its GPUs go to the waiting workers. */
  release(workerId: string): void {
    void this.pool?.then((pool) => pool.release(workerId));
  }

  /** Is the worker waiting for GPUs (the hosted platform's "throttled": no GPU free for it)? */
  waiting(workerId: string): boolean {
    return this.known?.waiting().some((r) => r.workerId === workerId) ?? false;
  }

  /** The GPUs an endpoint's workers hold and how many of them wait (its /health); undefined before a GPU worker started, or with no GPU. */
  ofEndpoint(endpointId: string): { held: Array<{ index: number; uuid: string; workerId: string }>; waiting: number } | undefined {
    if (!this.known || this.known.gpus.length === 0) return undefined;
    const held = this.known
      .holdings()
      .flatMap(({ gpu, holders }) =>
        holders.filter((r) => r.endpointId === endpointId).map((r) => ({ index: gpu.index, uuid: gpu.uuid, workerId: r.workerId })),
      );
    const waiting = this.known.waiting().filter((r) => r.endpointId === endpointId).length;
    return held.length > 0 || waiting > 0 ? { held, waiting } : undefined;
  }

  /** Each GPU with the workers holding it, and the workers waiting (`svc platform status`). */
  async status(): Promise<GpuStatus> {
    const pool = await this.inventory();
    return {
      gpus: pool.holdings().map(({ gpu, holders }) => ({ ...gpu, workers: holders.map((r) => ({ workerId: r.workerId, endpointId: r.endpointId })) })),
      waiting: pool.waiting().map((r) => ({ workerId: r.workerId, endpointId: r.endpointId, count: r.count })),
    };
  }
}
