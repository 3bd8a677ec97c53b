"""Checkpoint loading against the disk: how long the example's `load_into` takes to fill a
model from safetensors shards, next to `cat` reading the same bytes, both from a cold page cache.

    python3 bench/video/load.py [--layers 6] [--dir /var/tmp/svc-load-bench] [--threads 8] [--keep]

The checkpoint is a Wan 2.2 A14B expert cut to `--layers` of its 40 blocks (full-width tensors:
5120 x 13824 FFNs, bf16), written once in the published layout (shards + index) and reused. The
model is built on the meta device and materialised in host memory in bf16, as an offloaded expert
is. Three cold reads (the page cache dropped before each; needs root, else it says the figures are
warm): `cat` of the shards, the per-tensor copy loop the loader used before (mmap slice →
bytearray → tensor → copy_), and `load_into`. Prints seconds, GB/s and each loader's ratio to cat."""
import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "image-to-video"))

import torch  # noqa: E402

from wan.config import WAN22_I2V_A14B  # noqa: E402
from wan.transformer import WanTransformer  # noqa: E402
from wan.weights import empty_init, iter_checkpoint, load_into, materialize, write_safetensors  # noqa: E402

SHARD_BYTES = 1 << 30


def write_checkpoint(cfg, folder: str) -> None:
    with empty_init("meta"):
        model = WanTransformer(cfg)
    shard, size, index, n = {}, 0, {}, 0

    def flush():
        nonlocal shard, size, n
        n += 1
        name = f"diffusion_pytorch_model-{n:05d}.safetensors"
        write_safetensors(os.path.join(folder, name), shard)
        index.update({k: name for k in shard})
        shard, size = {}, 0

    for name, p in list(model.named_parameters()) + list(model.named_buffers()):
        shard[name] = torch.zeros(p.shape, dtype=torch.bfloat16)  # the bytes' values do not matter to I/O
        size += shard[name].numel() * 2
        if size >= SHARD_BYTES:
            flush()
    if shard:
        flush()
    with open(os.path.join(folder, "diffusion_pytorch_model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": index}, f)


def drop_cache() -> bool:
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def empty_model(cfg):
    with empty_init("meta"):
        model = WanTransformer(cfg)
    return materialize(model, "cpu", torch.bfloat16)


@torch.no_grad()
def copy_loop(model, folder):
    """The loader before: one bytearray copy per tensor, then copy_ into the parameter."""
    params = dict(model.named_parameters())
    params.update(dict(model.named_buffers()))
    for name, t in iter_checkpoint(folder):
        params[name].copy_(t.to(params[name].dtype))


def timed(label, fn, nbytes, cat_s=None):
    cold = drop_cache()
    t0 = time.perf_counter()
    fn()
    s = time.perf_counter() - t0
    ratio = f"  {s / cat_s:.2f}x cat" if cat_s else ""
    print(f"{label:<34} {s:7.2f} s  {nbytes / s / 1e9:5.2f} GB/s{ratio}{'' if cold else '  (page cache NOT dropped: warm)'}",
          flush=True)
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--dir", default="/var/tmp/svc-load-bench")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the checkpoint for the next run")
    args = ap.parse_args()
    cfg = dataclasses.replace(WAN22_I2V_A14B.transformer, num_layers=args.layers)
    folder = os.path.join(args.dir, f"a14b-{args.layers}-layers")
    if not os.path.isdir(folder):
        os.makedirs(folder)
        print(f"writing {folder} ...", flush=True)
        write_checkpoint(cfg, folder)
    shards = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".safetensors"))
    nbytes = sum(os.path.getsize(f) for f in shards)
    print(f"checkpoint: A14B expert cut to {args.layers} of 40 blocks, {len(shards)} shards, {nbytes / 1e9:.2f} GB "
          f"(the full expert: 40 blocks, 28.6 GB); torch {torch.__version__}, {os.cpu_count()} CPUs", flush=True)
    cat_s = timed("cat shards > /dev/null", lambda: subprocess.run(["cat", *shards], stdout=subprocess.DEVNULL, check=True), nbytes)
    model = empty_model(cfg)
    timed("per-tensor copies (before)", lambda: copy_loop(model, folder), nbytes, cat_s)
    model = empty_model(cfg)
    timed(f"load_into ({args.threads or 'default'} threads)", lambda: load_into(model, folder, threads=args.threads), nbytes, cat_s)
    if not args.keep:
        for f in os.listdir(folder):
            os.remove(os.path.join(folder, f))
        os.rmdir(folder)


if __name__ == "__main__":
    main()
