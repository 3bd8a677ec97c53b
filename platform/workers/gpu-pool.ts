/**
 * Which worker holds which GPU. A worker asks for its endpoint's gpuCount GPUs (the hosted
 * platform's GPUs per worker) and holds them alone, unless its endpoint shares them (then only with
 * other sharing workers). Requests are served first come, first served: one that cannot be served
 * waits, and so do the ones after it (a 2-GPU worker is not starved by 1-GPU ones); a release serves
 * the waiting ones in order. docs/platform.md, "GPUs".
 */
import type { GpuDevice } from "../gpu-machine.ts";

export interface GpuRequest {
  workerId: string;
  endpointId: string;
  count: number;
  /** The endpoint lets its workers share GPUs (with other sharing workers only). */
  shared: boolean;
}

export interface GpuHolding {
  gpu: GpuDevice;
  holders: GpuRequest[];
}

interface Waiter {
  request: GpuRequest;
  resolve: (gpus: GpuDevice[]) => void;
  reject: (error: Error) => void;
}

export class GpuPool {
  private readonly holders = new Map<number, GpuRequest[]>();
  private readonly waiters: Waiter[] = [];

  constructor(readonly gpus: readonly GpuDevice[]) {
    for (const gpu of gpus) this.holders.set(gpu.index, []);
  }

  /**
   * The GPUs for `request`: at once when they are free and nobody waits before it, else when
   * releases free them (`onWait` is called once, with how many requests wait before it). Rejects
   * when the request is cancelled; the caller checks `count` against the machine first.
   */
  acquire(request: GpuRequest, onWait?: (ahead: number) => void): Promise<GpuDevice[]> {
    const now = this.waiters.length === 0 ? this.pick(request) : undefined;
    if (now) return Promise.resolve(this.take(request, now));
    onWait?.(this.waiters.length);
    return new Promise((resolve, reject) => this.waiters.push({ request, resolve, reject }));
  }

  /** The worker is gone: its GPUs go to the waiting workers; if it was still waiting, it stops waiting. */
  release(workerId: string): void {
    for (const [index, list] of this.holders)
      this.holders.set(
        index,
        list.filter((r) => r.workerId !== workerId),
      );
    this.cancel(workerId);
    this.serveWaiting();
  }

  /** A waiting request is withdrawn (its worker is stopping before it started). */
  cancel(workerId: string): void {
    const at = this.waiters.findIndex((w) => w.request.workerId === workerId);
    if (at < 0) return;
    const [waiter] = this.waiters.splice(at, 1);
    waiter!.reject(new Error("stopped while waiting for a GPU"));
    this.serveWaiting();
  }

  /** Each GPU and who holds it (the order of the inventory). */
  holdings(): GpuHolding[] {
    return this.gpus.map((gpu) => ({ gpu, holders: [...(this.holders.get(gpu.index) ?? [])] }));
  }

  /** The requests waiting for GPUs, first first. */
  waiting(): GpuRequest[] {
    return this.waiters.map((w) => w.request);
  }

  private usable(gpu: GpuDevice, request: GpuRequest): boolean {
    const list = this.holders.get(gpu.index) ?? [];
    return request.shared ? list.every((r) => r.shared) : list.length === 0;
  }

  /** Free GPUs for the request (sharing: the least shared first), or undefined when too few are. */
  private pick(request: GpuRequest): GpuDevice[] | undefined {
    const load = (gpu: GpuDevice) => this.holders.get(gpu.index)?.length ?? 0;
    const usable = this.gpus.filter((gpu) => this.usable(gpu, request));
    if (usable.length < request.count) return undefined;
    return usable.sort((a, b) => load(a) - load(b) || a.index - b.index).slice(0, request.count);
  }

  private take(request: GpuRequest, gpus: GpuDevice[]): GpuDevice[] {
    for (const gpu of gpus) this.holders.get(gpu.index)!.push(request);
    return gpus;
  }

  private serveWaiting(): void {
    while (this.waiters.length > 0) {
      const head = this.waiters[0]!;
      const gpus = this.pick(head.request);
      if (!gpus) return;
      this.waiters.shift();
      head.resolve(this.take(head.request, gpus));
    }
  }
}
