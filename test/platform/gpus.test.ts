/**
 * GPU workers (docs/platform.md, "GPUs"): the inventory from nvidia-smi's answer, the driver's
 * library folders from `ldconfig -p`, the platform's CUDA_VISIBLE_DEVICES narrowing, the sandbox
 * arguments of a worker holding GPU 1 of 2, the variables without the sandbox (flags mode), the
 * assignment (waiting, release, gpuCount, sharing, first come first served), the one-time CPU
 * line, `svc platform status`'s lines, and the GPU image's Python.
 *
 * The GPU machine is a FAKE (GpuMachine fed with nvidia-smi's and ldconfig's text, device nodes
 * that "exist" by a list): no NVIDIA GPU can exist on the machines these tests run on. Everything
 * else is real: bwrapArgs, the pool, the CLI's formatting, real processes as the probed Pythons.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapArgs } from "../../platform/workers/sandbox.ts";
import type { GpuDevice, GpuMachine } from "../../platform/gpu-machine.ts";
import { deviceNodes, driverLibraryDirs, parseNvidiaSmi, visibleGpus } from "../../platform/workers/gpus.ts";
import { ImageEnvironments } from "../../platform/workers/image-env.ts";
import { CPU_ONLY_MESSAGE, gpuEnv, SHARE_GPUS_ENV, WorkerGpus } from "../../platform/workers/gpu-assign.ts";
import { firstCudaPython } from "../../platform/workers/interpreter.ts";
import { formatGpuStatus } from "../../cli/commands/_gpu-status.ts";

/** What `nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader` prints on a 2-GPU machine. */
const TWO_GPUS =
  "0, GPU-5f3c0d2e-aaaa-bbbb-cccc-000000000000, NVIDIA H100 80GB HBM3, 81559 MiB\n1, GPU-9e1a7b44-aaaa-bbbb-cccc-111111111111, NVIDIA H100 80GB HBM3, 81559 MiB\n";

/** `ldconfig -p` on the H100 machine (driver under /usr/local/nvidia/lib64) plus one outside /usr. */
const LDCONFIG = (outside: string) =>
  [
    "1234 libs found in cache `/etc/ld.so.cache'",
    "\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1",
    "\tlibnvidia-ml.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libnvidia-ml.so.1",
    "\tlibcuda.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libcuda.so.1",
    "\tlibcuda.so (libc6,x86-64) => /usr/local/nvidia/lib64/libcuda.so",
    `\tlibnvidia-ptxjitcompiler.so.1 (libc6,x86-64) => ${outside}/libnvidia-ptxjitcompiler.so.1`,
    "\tlibcudart.so.12 (libc6,x86-64) => /opt/conda/lib/libcudart.so.12",
  ].join("\n");

const NODES = new Set(["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]);

let work: string;
let outsideLibs: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "svc-gpus-test-"));
  outsideLibs = join(work, "nvidia-lib"); // a driver folder outside the system folders: exists, so it is bound
  await mkdir(outsideLibs);
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

function fakeMachine(nvidiaSmi: string, probes = { gpus: 0 }): GpuMachine {
  return {
    gpus: async () => {
      probes.gpus++;
      return parseNvidiaSmi(nvidiaSmi);
    },
    libraryDirs: async () => driverLibraryDirs(LDCONFIG(outsideLibs)),
    exists: (path) => NODES.has(path),
  };
}

const GPU_ENDPOINT = { id: "ep_gpu", name: "gpu-worker", gpuIds: "AMPERE_16", gpuCount: 1 };
const alive = (id: string) => ({ id, gone: () => false });

/** Until `workerId` is in the pool's queue (assign reads the inventory first); bounded. */
async function waiting(gpus: WorkerGpus, workerId: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if ((await gpus.status()).waiting.some((w) => w.workerId === workerId)) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`${workerId} never waited`);
}

describe("the machine's GPUs", () => {
  it("reads nvidia-smi's answer and the driver's folders from ldconfig", () => {
    const gpus = parseNvidiaSmi(TWO_GPUS);
    expect(gpus).toEqual([
      { index: 0, uuid: "GPU-5f3c0d2e-aaaa-bbbb-cccc-000000000000", name: "NVIDIA H100 80GB HBM3", memoryMiB: 81559 },
      { index: 1, uuid: "GPU-9e1a7b44-aaaa-bbbb-cccc-111111111111", name: "NVIDIA H100 80GB HBM3", memoryMiB: 81559 },
    ]);
    expect(parseNvidiaSmi("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")).toEqual([]);
    expect(driverLibraryDirs(LDCONFIG("/opt/nvidia/lib"))).toEqual(["/usr/local/nvidia/lib64", "/opt/nvidia/lib"]); // not libz, not the toolkit's libcudart
  });

  it("hands out only the GPUs the platform's own CUDA_VISIBLE_DEVICES names, when set", () => {
    const gpus = parseNvidiaSmi(TWO_GPUS);
    expect(visibleGpus(gpus, undefined)).toEqual(gpus);
    expect(visibleGpus(gpus, "1").map((g) => g.index)).toEqual([1]);
    expect(visibleGpus(gpus, "GPU-5f3c0d2e").map((g) => g.index)).toEqual([0]); // a UUID's prefix, as CUDA takes it
    expect(visibleGpus(gpus, "")).toEqual([]);
  });

  it("gives a worker its GPUs' nodes and the control nodes that exist", () => {
    const [gpu0, gpu1] = parseNvidiaSmi(TWO_GPUS) as [GpuDevice, GpuDevice];
    expect(deviceNodes([gpu1], (p) => NODES.has(p))).toEqual(["/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]); // no modeset here
    expect(deviceNodes([gpu0, gpu1], (p) => NODES.has(p)).slice(0, 2)).toEqual(["/dev/nvidia0", "/dev/nvidia1"]);
  });
});

describe("the sandbox of a worker holding GPU 1 of 2", () => {
  it("binds nvidia1 and the control nodes after /dev, not nvidia0; shows the driver folder; names GPU 1 to CUDA", async () => {
    const gpus = new WorkerGpus(fakeMachine(TWO_GPUS));
    const first = await gpus.assign(alive("wk_a"), GPU_ENDPOINT, {}, () => undefined);
    const grant = (await gpus.assign(alive("wk_b"), GPU_ENDPOINT, {}, () => undefined))!;
    expect(first!.gpus.map((g) => g.index)).toEqual([0]);
    expect(grant.gpus.map((g) => g.index)).toEqual([1]);

    const args = bwrapArgs({
      prefixes: [],
      hidden: [],
      packages: [],
      buildDir: work,
      etc: { dir: work, binds: [] },
      command: ["python3", "-s", "handlers/x.py"],
      gpu: grant,
    });
    const devBinds = args.flatMap((a, i) => (a === "--dev-bind" ? [args[i + 1]] : []));
    expect(devBinds).toEqual(["/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]);
    expect(args.join(" ")).not.toContain("/dev/nvidia0");
    for (const node of devBinds) expect(args[args.indexOf(node!) + 1]).toBe(node); // at the same path inside
    expect(args.indexOf("--dev-bind")).toBeGreaterThan(args.indexOf("--dev")); // over the sandbox's own /dev
    expect(args.indexOf("--dev-bind")).toBeLessThan(args.indexOf("--"));
    // /usr/local/nvidia/lib64 is already shown with /usr; the folder outside the system folders is bound read-only
    const roBinds = args.flatMap((a, i) => (a === "--ro-bind" ? [args[i + 1]] : []));
    expect(roBinds).toContain(outsideLibs);
    expect(roBinds).not.toContain("/usr/local/nvidia/lib64");
    expect(roBinds).toContain("/sys"); // CUDA's driver reads it (read-only, as in a container)

    const env = gpuEnv(grant, { LD_LIBRARY_PATH: "/opt/lib" });
    expect(env.CUDA_VISIBLE_DEVICES).toBe("GPU-9e1a7b44-aaaa-bbbb-cccc-111111111111");
    expect(env.LD_LIBRARY_PATH).toBe(`/usr/local/nvidia/lib64:${outsideLibs}:/opt/lib`);
  });

  it("a worker without GPUs gets no device binds", () => {
    const args = bwrapArgs({ prefixes: [], hidden: [], packages: [], buildDir: work, etc: { dir: work, binds: [] }, command: ["python3"] });
    expect(args).not.toContain("--dev-bind");
    expect(args).not.toContain("/sys");
    expect(gpuEnv(undefined, {})).toEqual({});
  });

  it("leaves the loader's own folders off LD_LIBRARY_PATH (they would come before torch's RUNPATH)", () => {
    const grant = {
      gpus: [],
      devices: [],
      libraryDirs: ["/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/local/nvidia/lib64"],
      env: { CUDA_VISIBLE_DEVICES: "0" },
    };
    expect(gpuEnv(grant, {}).LD_LIBRARY_PATH).toBe("/usr/local/nvidia/lib64");
    expect(gpuEnv({ ...grant, libraryDirs: ["/usr/lib/x86_64-linux-gnu"] }, {})).toEqual({ CUDA_VISIBLE_DEVICES: "0" });
  });
});

describe("without the sandbox (flags mode)", () => {
  it("a worker holding a GPU still gets CUDA_VISIBLE_DEVICES and the driver's library path", async () => {
    const grant = (await new WorkerGpus(fakeMachine(TWO_GPUS)).assign(alive("wk_a"), GPU_ENDPOINT, {}, () => undefined))!;
    const state = await mkdtemp(join(tmpdir(), "svc-gpus-flags-"));
    try {
      const images = new ImageEnvironments(state, () => undefined, "auto", "flags");
      const launch = await images.launch({
        image: "svc/worker-cpu:py3.11",
        python: "python3",
        buildDir: work,
        handler: "handlers/x.py",
        env: { CUDA_VISIBLE_DEVICES: "0,1" },
        gpu: grant,
      });
      expect(launch.sandboxed).toBe(false);
      expect(launch.env.CUDA_VISIBLE_DEVICES).toBe("GPU-5f3c0d2e-aaaa-bbbb-cccc-000000000000"); // the assignment, not the platform's own
      expect(launch.env.LD_LIBRARY_PATH?.split(":")).toContain("/usr/local/nvidia/lib64");
    } finally {
      await rm(state, { recursive: true, force: true });
    }
  });
});

describe("assignment", () => {
  it("two workers, one GPU: the second waits (one log line) and gets it when the first exits", async () => {
    const gpus = new WorkerGpus(fakeMachine(TWO_GPUS.split("\n")[0]!));
    const lines: string[] = [];
    const a = await gpus.assign(alive("wk_a"), GPU_ENDPOINT, {}, (l) => lines.push(l));
    let got: string | undefined;
    const b = gpus.assign(alive("wk_b"), GPU_ENDPOINT, {}, (l) => lines.push(l)).then((g) => (got = g?.env.CUDA_VISIBLE_DEVICES));
    await waiting(gpus, "wk_b");
    expect(got).toBeUndefined();
    expect(lines).toEqual(["worker wk_b waits for 1 free GPU(s) (GPU 0: wk_a)"]);
    expect(await gpus.status()).toMatchObject({
      gpus: [{ index: 0, workers: [{ workerId: "wk_a", endpointId: "ep_gpu" }] }],
      waiting: [{ workerId: "wk_b", count: 1 }],
    });

    gpus.release("wk_a");
    await b;
    expect(got).toBe(a!.env.CUDA_VISIBLE_DEVICES);
    expect(lines).toHaveLength(1);
    expect(await gpus.status()).toMatchObject({ gpus: [{ workers: [{ workerId: "wk_b" }] }], waiting: [] });
  });

  it("a worker stopped while it waits stops waiting and does not hold the queue", async () => {
    const gpus = new WorkerGpus(fakeMachine(TWO_GPUS.split("\n")[0]!));
    await gpus.assign(alive("wk_a"), GPU_ENDPOINT, {}, () => undefined);
    const b = gpus.assign(alive("wk_b"), GPU_ENDPOINT, {}, () => undefined);
    const c = gpus.assign(alive("wk_c"), GPU_ENDPOINT, {}, () => undefined);
    await waiting(gpus, "wk_c");
    gpus.cancel("wk_b");
    await expect(b).rejects.toThrow(/stopped while waiting for a GPU/);
    gpus.release("wk_a");
    expect((await c)!.gpus[0]!.index).toBe(0);
    // a worker gone before it asked never takes one
    await expect(gpus.assign({ id: "wk_d", gone: () => true }, GPU_ENDPOINT, {}, () => undefined)).rejects.toThrow(/stopped before it started/);
    expect((await gpus.status()).waiting).toEqual([]);
  });

  it("gpuCount 2 takes both GPUs; a later 1-GPU worker waits; more than the machine has is GPUS_UNAVAILABLE", async () => {
    const gpus = new WorkerGpus(fakeMachine(TWO_GPUS));
    const two = await gpus.assign(alive("wk_a"), { ...GPU_ENDPOINT, gpuCount: 2 }, {}, () => undefined);
    expect(two!.gpus.map((g) => g.index)).toEqual([0, 1]);
    expect(two!.devices.filter((d) => /^\/dev\/nvidia\d$/.test(d))).toEqual(["/dev/nvidia0", "/dev/nvidia1"]);
    expect(two!.env.CUDA_VISIBLE_DEVICES.split(",")).toHaveLength(2);
    const lines: string[] = [];
    const one = gpus.assign(alive("wk_b"), GPU_ENDPOINT, {}, (l) => lines.push(l));
    await waiting(gpus, "wk_b");
    expect(lines).toHaveLength(1);
    await expect(gpus.assign(alive("wk_c"), { ...GPU_ENDPOINT, gpuCount: 3 }, {}, () => undefined)).rejects.toMatchObject({ code: "GPUS_UNAVAILABLE" });
    gpus.release("wk_a");
    expect((await one)!.gpus).toHaveLength(1);
  });

  it("serves first come first served: a waiting 2-GPU worker is not overtaken by a 1-GPU one", async () => {
    const gpus = new WorkerGpus(fakeMachine(TWO_GPUS));
    await gpus.assign(alive("wk_a"), GPU_ENDPOINT, {}, () => undefined);
    const order: string[] = [];
    const big = gpus.assign(alive("wk_big"), { ...GPU_ENDPOINT, gpuCount: 2 }, {}, () => undefined).then(() => order.push("wk_big"));
    await waiting(gpus, "wk_big");
    const small = gpus.assign(alive("wk_small"), GPU_ENDPOINT, {}, () => undefined).then(() => order.push("wk_small"));
    await waiting(gpus, "wk_small");
    expect(order).toEqual([]); // GPU 1 is free, but wk_big asked first
    gpus.release("wk_a");
    await big;
    expect(order).toEqual(["wk_big"]);
    gpus.release("wk_big");
    await small;
    expect(order).toEqual(["wk_big", "wk_small"]);
  });

  it("workers of an endpoint that shares GPUs (SVC_SHARE_GPUS=1) share; a worker that does not waits for a free one", async () => {
    const gpus = new WorkerGpus(fakeMachine(TWO_GPUS.split("\n")[0]!));
    const share = { [SHARE_GPUS_ENV]: "1" };
    const a = await gpus.assign(alive("wk_a"), GPU_ENDPOINT, share, () => undefined);
    const b = await gpus.assign(alive("wk_b"), GPU_ENDPOINT, share, () => undefined);
    expect(b!.gpus).toEqual(a!.gpus);
    let alone = false;
    const c = gpus.assign(alive("wk_c"), GPU_ENDPOINT, {}, () => undefined).then(() => (alone = true));
    await waiting(gpus, "wk_c");
    gpus.release("wk_a");
    await gpus.status();
    expect(alone).toBe(false); // wk_b still uses it
    expect((await gpus.status()).waiting.map((w) => w.workerId)).toEqual(["wk_c"]);
    gpus.release("wk_b");
    await c;
    expect(alone).toBe(true);
  });
});

describe("a machine without GPUs", () => {
  it("runs GPU endpoints' workers as before and says once that they run on the CPU", async () => {
    const probes = { gpus: 0 };
    const gpus = new WorkerGpus(fakeMachine("", probes));
    const lines: string[] = [];
    for (const id of ["wk_a", "wk_b", "wk_c"]) {
      const endpoint = id === "wk_c" ? { ...GPU_ENDPOINT, id: "ep_other", name: "other" } : GPU_ENDPOINT;
      expect(await gpus.assign(alive(id), endpoint, {}, (l) => lines.push(l))).toBeUndefined();
    }
    expect(lines).toEqual([CPU_ONLY_MESSAGE]);
    expect(probes.gpus).toBe(1); // nvidia-smi is asked once
    expect(await gpus.present()).toBe(false);
  });

  it("a CPU endpoint asks nothing of the machine", async () => {
    const probes = { gpus: 0 };
    const gpus = new WorkerGpus(fakeMachine(TWO_GPUS, probes));
    expect(await gpus.assign(alive("wk_a"), { ...GPU_ENDPOINT, gpuIds: null, gpuCount: null }, {}, () => undefined)).toBeUndefined();
    expect(probes.gpus).toBe(0);
  });
});

describe("svc platform status", () => {
  it("lists each GPU with the worker holding it, and the waiting workers", async () => {
    const gpus = new WorkerGpus(fakeMachine(TWO_GPUS));
    await gpus.assign(alive("wk_a"), GPU_ENDPOINT, {}, () => undefined);
    await gpus.assign(alive("wk_b"), { ...GPU_ENDPOINT, id: "ep_b", name: "b" }, {}, () => undefined);
    const c = gpus.assign(alive("wk_c"), GPU_ENDPOINT, {}, () => undefined);
    await waiting(gpus, "wk_c");
    gpus.release("wk_b");
    await c;
    void gpus.assign(alive("wk_d"), { ...GPU_ENDPOINT, id: "ep_b", name: "b" }, {}, () => undefined);
    await waiting(gpus, "wk_d");
    const view = await gpus.status();
    const names: Record<string, string> = { ep_gpu: "gpu-worker", ep_b: "b" };
    const text = formatGpuStatus({
      gpus: view.gpus.map((g) => ({ ...g, workers: g.workers.map((w) => ({ ...w, endpointName: names[w.endpointId]! })) })),
      waiting: view.waiting.map((w) => ({ ...w, endpointName: names[w.endpointId]! })),
    });
    expect(text).toBe(
      [
        "GPUs: 2",
        "  GPU 0  NVIDIA H100 80GB HBM3  81559 MiB  GPU-5f3c0d2e-aaaa-bbbb-cccc-000000000000  held by wk_a (gpu-worker)",
        "  GPU 1  NVIDIA H100 80GB HBM3  81559 MiB  GPU-9e1a7b44-aaaa-bbbb-cccc-111111111111  held by wk_c (gpu-worker)",
        "  waiting for 1 GPU(s): wk_d (b)",
        "",
      ].join("\n"),
    );
    expect(formatGpuStatus({ gpus: [], waiting: [] })).toMatch(/GPUs: none .* run on the CPU/);
  });
});

describe("the GPU image's Python", () => {
  it("is the first Python whose torch reports CUDA", async () => {
    // stand-ins for interpreters (real processes): exit 3 is what the probe exits with when torch sees no CUDA
    const noCuda = join(work, "python-no-cuda");
    const cuda = join(work, "python-cuda");
    await writeFile(noCuda, "#!/bin/sh\nexit 3\n");
    await writeFile(cuda, '#!/bin/sh\ncase "$2" in *torch.cuda.is_available*) exit 0;; esac\nexit 1\n');
    await chmod(noCuda, 0o755);
    await chmod(cuda, 0o755);
    expect(await firstCudaPython([join(work, "absent"), noCuda, cuda])).toBe(cuda);
    expect(await firstCudaPython([noCuda])).toBeUndefined();
  });
});
