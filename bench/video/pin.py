"""Pinned host memory of an offloaded A14B expert, packed into one buffer (wan/residency.pin), next to
the tensor-by-tensor pinning the loader did before, and the swap in to the GPU from each.

    python3 bench/video/pin.py [--layers 40] [--before-layers 10]

The expert (cut to `--layers` of its 40 blocks; full-width bf16 tensors) is built on the meta device
and packed as the loader packs an offloaded part, then filled with random values made on the GPU.
Printed: the tensors' bytes, the buffer's, what torch's pinned allocator holds, the process's RSS
growth, the swap in (HostCopies.to_device, twice). Then an expert cut to `--before-layers` blocks
pinned tensor by tensor (`t.data = t.data.pin_memory()`, the old `pin`): the allocator's bytes for
it and its swap in. Last, a check that both load_into paths still fill a model: preadv straight
into the page-locked buffer, and the pinned staging copy into a CUDA model. Needs CUDA."""
import argparse
import dataclasses
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "image-to-video"))

import torch  # noqa: E402

from wan.config import TINY, WAN22_I2V_A14B  # noqa: E402
from wan.residency import HostCopies, pin  # noqa: E402
from wan.transformer import WanTransformer  # noqa: E402
from wan.weights import empty_init, load_into, materialize, random_init, write_safetensors  # noqa: E402

GIB = 2 ** 30


def proc_status(field: str) -> int:
    """A /proc/self/status size in bytes (VmRSS, VmLck, VmPin)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def allocator_bytes() -> int:
    """What torch's caching pinned host allocator holds now."""
    return getattr(torch.cuda, "host_memory_stats", dict)().get("allocated_bytes.current", 0)


def tensor_bytes(m) -> int:
    return sum(t.numel() * t.element_size() for t in m.state_dict().values())


def expert(layers: int):
    with empty_init("meta"):
        return WanTransformer(dataclasses.replace(WAN22_I2V_A14B.transformer, num_layers=layers)).to(torch.bfloat16)


@torch.no_grad()
def fill_random(m) -> None:
    for p in m.parameters():
        p.copy_(torch.randn(p.shape, device="cuda", dtype=p.dtype).mul_(0.02))
    torch.cuda.synchronize()


def swap_in(m, label: str) -> None:
    copies = HostCopies(m)
    probe = next(m.parameters()).detach().clone()
    for i in range(2):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        copies.to_device(torch.device("cuda"))
        torch.cuda.synchronize()
        s = time.perf_counter() - t0
        n = tensor_bytes(m)
        assert torch.equal(next(m.parameters()).cpu(), probe)
        copies.to_host()
        torch.cuda.empty_cache()
        print(f"  {label} swap in #{i + 1}: {s:.2f} s, {n / s / 1e9:.1f} GB/s", flush=True)


def check_load_paths() -> None:
    src = random_init(WanTransformer(TINY.transformer), 5).to(torch.bfloat16)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.safetensors")
        write_safetensors(path, src.state_dict())
        with empty_init("meta"):
            host = pin(WanTransformer(TINY.transformer).to(torch.bfloat16))
        load_into(host, path)
        with empty_init("meta"):
            dev = materialize(WanTransformer(TINY.transformer), "cuda", torch.bfloat16)
        load_into(dev, path)
    want = src.state_dict()
    ok_host = all(torch.equal(v, want[k]) for k, v in host.state_dict().items())
    ok_dev = all(torch.equal(v.cpu(), want[k]) for k, v in dev.state_dict().items())
    pinned = all(t.is_pinned() for t in host.state_dict().values())
    print(f"  load_into, tiny model: preadv into the packed buffer {'ok' if ok_host else 'WRONG'} (pinned: {pinned}); "
          f"staging copy into CUDA {'ok' if ok_dev else 'WRONG'}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=40)
    ap.add_argument("--before-layers", type=int, default=10)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("CUDA is not available: pinning needs a GPU (tests/test_residency.py checks the packing on CPU)")
        return 1
    torch.cuda.init()
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, {os.cpu_count()} CPUs", flush=True)

    rss0, held0 = proc_status("VmRSS"), allocator_bytes()
    m = expert(args.layers)
    t0 = time.perf_counter()
    pin(m)
    pin_s = time.perf_counter() - t0
    fill_random(m)
    n = tensor_bytes(m)
    first = next(m.parameters())
    buffer = (first.untyped_storage() if hasattr(first, "untyped_storage") else first.storage()).nbytes()
    print(f"one buffer: A14B expert, {args.layers} of 40 blocks, {n / GIB:.2f} GiB of bf16 tensors; packed and "
          f"pinned in {pin_s:.1f} s; buffer {buffer / GIB:.2f} GiB (+{(buffer - n) / 2**20:.2f} MiB alignment); "
          f"pinned allocator +{(allocator_bytes() - held0) / GIB:.2f} GiB; RSS +{(proc_status('VmRSS') - rss0) / GIB:.2f} GiB; "
          f"VmLck {proc_status('VmLck') / GIB:.2f} GiB, VmPin {proc_status('VmPin') / GIB:.2f} GiB; "
          f"is_pinned {all(t.is_pinned() for t in m.state_dict().values())}", flush=True)
    swap_in(m, "one buffer")
    del m

    held0 = allocator_bytes()
    old = materialize(expert(args.before_layers), "cpu", torch.bfloat16)
    t0 = time.perf_counter()
    for t in list(old.parameters()):
        t.data = t.data.pin_memory()
    pin_s = time.perf_counter() - t0
    fill_random(old)
    n = tensor_bytes(old)
    held = allocator_bytes() - held0
    print(f"tensor by tensor (before): {args.before_layers} blocks, {n / GIB:.2f} GiB of bf16 tensors; pinned in "
          f"{pin_s:.1f} s; pinned allocator +{held / GIB:.2f} GiB ({held / n:.2f}x the tensors)", flush=True)
    swap_in(old, "tensor by tensor")
    del old
    check_load_paths()
    return 0


if __name__ == "__main__":
    sys.exit(main())
