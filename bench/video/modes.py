"""The image-to-video sampling modes side by side (examples/image-to-video/README.md, "Sampling
modes"): transformer forwards per job, step time, and on a GPU the 720p A14B job end to end.

    python3 bench/video/bench.py --modes [--tiny]

On CPU: the tiny A14B config's whole pipeline per mode (standard 40 guided steps, cached 40 steps,
distilled 4 unguided steps with a random adapter merged), its seconds per step and the cached
output's deviation from the standard one. On CUDA: Wan 2.2 I2V-A14B at full size with random bf16
weights, placed as the example places them (wan/residency.py: on an 80 GB card the experts and
T5 wait in pinned host memory), a random rank-64 adapter merged into the high-noise expert (the
merge's cost), the distilled job end to end through the example's `generate` (T5, VAE encode,
4 forwards across the expert switch, VAE decode), then one guided 720p step; the 40-step and cached
jobs are estimated from those parts and the cache's forward count (its decisions depend on the
calibration table only, not on the data)."""
import os
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "image-to-video")
for p in (APP, os.path.join(APP, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

from wan.config import TINY, WAN22_I2V_A14B  # noqa: E402
from wan.inputs import DISTILLED_DEFAULTS  # noqa: E402
from wan.loader import Components, load_components, vae_class  # noqa: E402
from wan.lora import merge_adapter  # noqa: E402
from wan.modes import Mode  # noqa: E402
from wan.pipeline import generate  # noqa: E402
from wan.residency import HostCopies, pin, plan_residency  # noqa: E402
from wan.stepcache import MagCacheParams  # noqa: E402
from wan.t5 import T5Encoder  # noqa: E402
from wan.tokenizer import ByteTokenizer  # noqa: E402
from wan.transformer import WanTransformer  # noqa: E402
from wan.weights import empty_init  # noqa: E402

from tiny_checkpoint import write_adapter, write_tiny_adapters  # noqa: E402

STEPS, GUIDANCE, SHIFT = 40, 3.5, 5.0   # the authors' A14B 40-step setting
D_STEPS = DISTILLED_DEFAULTS["num_inference_steps"]


def cache_plan(cfg, steps=STEPS, shift=SHIFT, guided=True):
    """(forwards computed, steps with both branches computed, with one, with none) of a cached job."""
    cache = Mode("cached", "unipc", MagCacheParams()).step_cache(cfg, steps, shift)
    branches = (0, 1) if guided else (0,)
    both = one = 0
    for i in range(steps):
        cache.begin(i, branches)
        ran = []
        cache.run_blocks(torch.zeros(len(branches), 1, 1), lambda rows: ran.extend(rows) or torch.zeros(len(rows), 1, 1))
        both += len(ran) == 2
        one += len(ran) == 1
    return len(cache.computed), both, one, steps - both - one


def _rgb(h, w):
    return np.random.default_rng(0).integers(0, 256, (h, w, 3), dtype=np.uint8)


def run_cpu_tiny():
    rgb = _rgb(48, 72)
    c = load_components("tiny", device=torch.device("cpu"), dtype=torch.float32)
    rows = []
    for name, steps, g, solver, cache in (("standard", STEPS, GUIDANCE, "unipc", None),
                                          ("cached", STEPS, GUIDANCE, "unipc", MagCacheParams())):
        mode = Mode(name, solver, cache)
        t0 = time.perf_counter()
        r = generate(c, rgb, "a cat", "", 9, steps, g, SHIFT, 42, solver, area=64 * 64,
                     step_cache=mode.step_cache(TINY, steps, SHIFT))
        rows.append((name, steps, r, time.perf_counter() - t0))
    with tempfile.TemporaryDirectory() as tmp:
        adapters = write_tiny_adapters(tmp)
        d = load_components("tiny", device=torch.device("cpu"), dtype=torch.float32, adapters=adapters)
        t0 = time.perf_counter()
        r = generate(d, rgb, "a cat", "", 9, D_STEPS, 1.0, SHIFT, 42, "distilled-euler", area=64 * 64)
        rows.append(("distilled", D_STEPS, r, time.perf_counter() - t0))
    base = rows[0][2].latent
    print(f"tiny A14B config on CPU (torch {torch.__version__}, {torch.get_num_threads()} threads), 9 frames 64x64 area:")
    for name, steps, r, total in rows:
        dev = ""
        if name == "cached":
            dev = f", final latent rel-L2 vs standard {((r.latent - base).norm() / base.norm()).item():.2e}"
        print(f"  {name:9s} {steps:2d} steps: {r.forwards:2d} transformer forwards ({r.steps_computed} steps computed), "
              f"denoise {r.timings['denoise'] * 1000 / steps:.1f} ms/step, job {total:.2f} s{dev}")


def _pinned_random(module, device, std=0.02, seed=0):
    """A meta-built module packed as the loader packs an offloaded part (wan/residency.pin: one
    page-locked buffer that every tensor views), filled with random values generated on `device`
    (CPU-side generation of 14B values is too slow)."""
    torch.manual_seed(seed)
    pin(module)
    with torch.no_grad():
        for m in module.modules():
            for name, p in m._parameters.items():
                if p is None:
                    continue
                tmp = torch.empty(p.shape, dtype=p.dtype, device=device)
                if "norm" in name or name == "gamma":
                    tmp.fill_(1.0)
                elif name == "bias":
                    tmp.zero_()
                else:
                    tmp.normal_(0.0, std)
                p.copy_(tmp)
    return module


def _param_bytes(cls, part, bytes_per=2):
    with empty_init("meta"):
        m = cls(part)
    return sum(p.numel() for p in m.parameters()) * bytes_per


def build_full(cfg, device, dtype, offload):
    """The example's Components for `cfg` with random weights; experts and T5 in (pinned) host
    memory when offloaded, as wan/loader.py places a real checkpoint."""
    home = torch.device("cpu") if offload else device
    parts = []
    for i in range(2):
        with empty_init("meta"):
            m = WanTransformer(cfg.transformer).to(dtype)
        parts.append(_pinned_random(m, device, seed=i).to(home).eval())
    with empty_init("meta"):
        t5 = T5Encoder(cfg.t5).to(dtype)
    t5 = _pinned_random(t5, device, seed=5).to(home).eval()
    with empty_init("meta"):
        vae = vae_class(cfg)(cfg.vae)
    vae = _pinned_random(vae, device, seed=6).to(device).eval()
    comps = Components(cfg=cfg, device=device, dtype=dtype, experts=parts, vae=vae, t5=t5,
                       tokenizer=ByteTokenizer(cfg.t5.max_len), offload=offload)
    if offload:
        comps.host_copies = {id(m): HostCopies(m) for m in parts + [t5]}
    return comps


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def run_full_job(cfg, device, dtype, h, w, frames, rank=64, budget_s=280.0):
    t_start = time.perf_counter()
    weight_bytes = 2 * _param_bytes(WanTransformer, cfg.transformer) + _param_bytes(T5Encoder, cfg.t5)
    card = torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else 1 << 40
    offload = plan_residency(weight_bytes, card) if device.type == "cuda" else True
    t0 = time.perf_counter()
    comps = build_full(cfg, device, dtype, offload)
    print(f"  built random {cfg.name} (2 experts + T5 + VAE) in {time.perf_counter() - t0:.1f} s; "
          f"offload={offload} (weights {weight_bytes / 2**30:.1f} GiB, card {card / 2**30:.1f} GiB)", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "high_noise_model.safetensors")
        t0 = time.perf_counter()
        n = write_adapter(path, comps.experts[0], rank=rank, alpha=rank, device=device.type, scale=1e-3)
        size = os.path.getsize(path)
        t1 = time.perf_counter()
        merge_adapter(comps.experts[0], path, device)
        sync(device)
        print(f"  rank-{rank} adapter, {n} weights, {size / 2**20:.0f} MiB fp32: written {t1 - t0:.1f} s, "
              f"merged into the high-noise expert {time.perf_counter() - t1:.1f} s (read + {n} products on {device.type})", flush=True)

    rgb = _rgb(h, w)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    sync(device)
    t0 = time.perf_counter()
    r = generate(comps, rgb, "a cat", "", frames, D_STEPS, 1.0, SHIFT, 42, "distilled-euler", area=h * w)
    sync(device)
    job = time.perf_counter() - t0
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else 0.0
    tm = r.timings
    per_forward = tm["denoise"] / r.forwards
    print(f"  distilled job ({w}x{h}, {frames} frames, {D_STEPS} steps, {r.forwards} forwards, experts {r.experts_used}): "
          f"{job:.1f} s end to end = text_encode {tm['text_encode']:.1f} + image_encode {tm['image_encode']:.1f} "
          f"+ denoise {tm['denoise']:.1f} ({per_forward:.1f} s/forward incl. swaps) + decode {tm['decode']:.1f}; "
          f"peak GPU memory {peak:.1f} GiB (first job of the process: includes kernel warm-up)", flush=True)

    if time.perf_counter() - t_start > budget_s:
        print("  (time budget spent: no guided step measured)")
        return
    # One guided 720p step on the low-noise expert (resident after the distilled job's last steps).
    model = comps.experts[1]
    if offload:
        comps.host_copies[id(model)].to_device(device)
    tc = cfg.transformer
    lt, lh, lw = (frames - 1) // 4 + 1, h // 8, w // 8
    x = torch.randn(2, tc.in_dim, lt, lh, lw, device=device)
    ctx = torch.randn(2, tc.text_len, tc.text_dim, device=device, dtype=dtype)
    t = torch.full((2,), 500, device=device)
    with torch.no_grad():
        sync(device)
        t0 = time.perf_counter()
        model(x, t, ctx)
        sync(device)
        guided = time.perf_counter() - t0
    del x, ctx
    if offload:   # back home, as generate leaves its experts
        comps.host_copies[id(model)].to_host()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    computed, both, one, none = cache_plan(cfg)
    rest = tm["text_encode"] + tm["image_encode"] + tm["decode"]
    base_job = rest + STEPS * guided
    cached_job = rest + both * guided + one * per_forward
    print(f"  guided step (cond+uncond batched, {lt * (lh // 2) * (lw // 2)} tokens): {guided:.1f} s; "
          f"40-step job ≈ {base_job:.0f} s ({2 * STEPS} forwards); cached ≈ {cached_job:.0f} s "
          f"({computed} forwards: {both} steps both branches, {one} one, {none} none); "
          f"distilled measured {job:.0f} s ({base_job / job:.1f}x faster than 40 steps)", flush=True)
    if time.perf_counter() - t_start + job < budget_s + 60:
        sync(device)
        t0 = time.perf_counter()
        r = generate(comps, rgb, "a cat", "", frames, D_STEPS, 1.0, SHIFT, 43, "distilled-euler", area=h * w)
        sync(device)
        tm = r.timings
        print(f"  distilled job again (warm process): {time.perf_counter() - t0:.1f} s end to end = text_encode "
              f"{tm['text_encode']:.1f} + image_encode {tm['image_encode']:.1f} + denoise {tm['denoise']:.1f} "
              f"+ decode {tm['decode']:.1f}", flush=True)
    print(f"  (bench wall time so far {time.perf_counter() - t_start:.0f} s)", flush=True)
    try:
        import diffusers  # noqa: F401
        print("  diffusers is installed but its Wan pipeline needs weights in its own layout: no ratio measured")
    except ImportError:
        print("  diffusers is not installed here (the GPU machine has no network to install it): no ratio to its step")


def _host_pinned():
    """The CUDA caching host allocator's current bytes (torch >= 2.5 reports them)."""
    stats = getattr(torch.cuda, "host_memory_stats", lambda: {})()
    return {k: f"{v / 2**30:.1f} GiB" for k, v in stats.items() if "bytes" in k and k.endswith(".current")}


def run_gpu_load(rank=64):
    """The distilled mode's load-time costs on CUDA: a rank-64 adapter merged into an offloaded
    (pinned host) A14B expert, and the pinned host memory it takes (bench/video/pin.py compares
    it with pinning tensor by tensor)."""
    dev, cfg = torch.device("cuda"), WAN22_I2V_A14B
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}", flush=True)
    size = _param_bytes(WanTransformer, cfg.transformer)
    t0 = time.perf_counter()
    with empty_init("meta"):
        expert = WanTransformer(cfg.transformer).to(torch.bfloat16)
    expert = _pinned_random(expert, dev)
    print(f"  one expert ({size / 2**30:.1f} GiB bf16) random in one page-locked buffer (wan/residency.pin): "
          f"{time.perf_counter() - t0:.1f} s; torch's pinned allocator {_host_pinned()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "high_noise_model.safetensors")
        n = write_adapter(path, expert, rank=rank, alpha=rank, device="cuda", scale=1e-3)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        merge_adapter(expert, path, dev)
        torch.cuda.synchronize()
        print(f"  rank-{rank} adapter ({n} weights, {os.path.getsize(path) / 2**20:.0f} MiB) merged into it: "
              f"{time.perf_counter() - t0:.1f} s", flush=True)


def run_gpu():
    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}", flush=True)
    computed, both, one, none = cache_plan(WAN22_I2V_A14B)
    print(f"forwards per job: standard {2 * STEPS} (40 guided steps), cached {computed}, distilled {D_STEPS} (unguided)")
    run_full_job(WAN22_I2V_A14B, dev, torch.bfloat16, 720, 1280, 81)


def main(tiny_only=False, load_only=False):
    if load_only and torch.cuda.is_available():
        run_gpu_load()
        return 0
    if torch.cuda.is_available() and not tiny_only:
        run_gpu()
        return 0
    computed, both, one, none = cache_plan(TINY)
    print(f"forwards per job: standard {2 * STEPS}, cached {computed} (MagCache {MagCacheParams()}), "
          f"distilled {D_STEPS}")
    run_cpu_tiny()
    if not torch.cuda.is_available():
        print("CUDA is not available: no 720p figures (they need a GPU); the code path of the full-size job "
              "runs at the tiny config:")
        run_full_job(TINY, torch.device("cpu"), torch.float32, 48, 80, 9)
    return 0
