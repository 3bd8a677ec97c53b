"""Image-to-video speed benchmark for Wan 2.2 I2V-A14B (one 14B expert) and Wan 2.2 TI2V-5B at
720p: seconds per guided denoising step (cond+uncond batched, random bf16 weights, full-size
model, the example's own transformer under bf16 autocast), a VAE decode of the 720p latent, and
the share of the bf16 FLOP floor (matmul FLOPs from the config / measured time / assumed peak).

    python3 bench/video/bench.py [--model a14b,5b] [--peak-tflops 989] [--repeat 2] [--no-vae]
    python3 bench/video/bench.py --modes [--tiny]     # per sampling mode: bench/video/modes.py

Without CUDA it says so, runs the tiny configs of both models on CPU to show the code path works
(no full-size figure is printed), and exits 0."""
import argparse
import os
import sys
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "image-to-video")
sys.path.insert(0, APP)

import torch  # noqa: E402

from wan.config import TINY, TINY_5B, WAN22_I2V_A14B, WAN22_TI2V_5B, ModelConfig  # noqa: E402
from wan.loader import vae_class  # noqa: E402
from wan.transformer import WanTransformer  # noqa: E402
from wan.weights import empty_init, materialize, random_init, random_init_fast  # noqa: E402


@dataclass(frozen=True)
class Case:
    label: str
    cfg: ModelConfig
    tiny: ModelConfig
    height: int      # the model's 720p output
    width: int
    frames: int      # the model's default 5 s clip


CASES = {
    "a14b": Case("Wan 2.2 I2V-A14B (one expert)", WAN22_I2V_A14B, TINY, 720, 1280, 81),
    "5b": Case("Wan 2.2 TI2V-5B", WAN22_TI2V_5B, TINY_5B, 704, 1280, 121),
}


def latent_shape(cfg: ModelConfig, h: int, w: int, frames: int):
    st, sh, sw = cfg.vae.stride
    return (frames - 1) // st + 1, h // sh, w // sw


def forward_flops(cfg, tokens: int, text_len: int = 512) -> float:
    """Matmul FLOPs (2 per multiply-add) of one transformer forward for one sample."""
    d, f, L = cfg.dim, cfg.ffn_dim, cfg.num_layers
    per_token = (8 * d * d            # self-attn q, k, v, o
                 + 4 * tokens * d     # self-attn QK^T and PV
                 + 4 * d * d          # cross-attn q, o
                 + 4 * text_len * d   # cross-attn QK^T and PV over 512 text tokens
                 + 4 * d * f)         # FFN
    per_sample = 4 * text_len * d * d  # cross-attn k, v over the text (once per sample)
    embed = tokens * 2 * d * 4 * (cfg.in_dim + cfg.out_dim)  # patch embed + head (patch 1x2x2)
    return L * (tokens * per_token + per_sample) + embed


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_step(model, cfg: ModelConfig, h, w, frames, repeat, device, dtype):
    tc = cfg.transformer
    lt, lh, lw = latent_shape(cfg, h, w, frames)
    per_frame = (lh // 2) * (lw // 2)
    tokens = lt * per_frame
    x = torch.randn(2, tc.in_dim, lt, lh, lw, device=device)
    ctx = torch.randn(2, tc.text_len, tc.text_dim, device=device, dtype=dtype)
    t = torch.full((2,), 950, device=device)
    if cfg.first_frame_latent:  # per-token timesteps: the image's latent frame gets 0
        t = torch.full((2, tokens), 950.0, device=device)
        t[:, :per_frame] = 0
    times = []
    with torch.inference_mode():
        for i in range(repeat + 1):  # the first run warms kernels and the allocator
            sync()
            t0 = time.perf_counter()
            v = model(x, t, ctx)
            v = v[1] + 5.0 * (v[0] - v[1])
            sync()
            if i:
                times.append(time.perf_counter() - t0)
    return tokens, min(times)


def time_decode(vae, cfg: ModelConfig, h, w, frames, device):
    z = torch.randn(1, cfg.vae.z_dim, *latent_shape(cfg, h, w, frames), device=device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    sync()
    t0 = time.perf_counter()
    out = vae.decode(z)
    sync()
    return tuple(z.shape), tuple(out.shape), time.perf_counter() - t0


def run_cuda(case: Case, args):
    device, dtype = torch.device("cuda"), torch.bfloat16
    cfg = case.cfg
    t0 = time.perf_counter()
    with empty_init("meta"):
        model = WanTransformer(cfg.transformer)
    model = random_init_fast(materialize(model, device, dtype), seed=0).eval()
    n = sum(p.numel() for p in model.parameters())
    print(f"{case.label}: {n / 1e9:.2f}B params bf16, built in {time.perf_counter() - t0:.1f} s")
    peak = args.peak_tflops * 1e12
    tokens, sec = time_step(model, cfg, case.height, case.width, case.frames, args.repeat, device, dtype)
    flops = 2 * forward_flops(cfg.transformer, tokens)
    print(f"  {case.width}x{case.height} x {case.frames} frames: {tokens} tokens, guided step {sec:.3f} s, "
          f"{flops / 1e15:.2f} PFLOP → {flops / sec / 1e12:.0f} TFLOP/s = {100 * flops / sec / peak:.1f}% "
          f"of {args.peak_tflops:.0f} TFLOP/s; 40 steps ≈ {40 * sec:.0f} s (floor {40 * flops / peak:.0f} s); "
          f"peak mem {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
    del model
    torch.cuda.empty_cache()
    if not args.no_vae:
        with empty_init("meta"):
            vae = vae_class(cfg)(cfg.vae)
        vae = random_init_fast(materialize(vae, device, torch.float32), 1).eval()
        zs, vs, sec = time_decode(vae, cfg, case.height, case.width, case.frames, device)
        print(f"  VAE {cfg.vae.version} decode {zs} → {vs}: {sec:.2f} s fp32, "
              f"peak mem {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
        del vae
        torch.cuda.empty_cache()


def run_cpu_tiny(case: Case):
    cfg = case.tiny
    model = random_init(WanTransformer(cfg.transformer), 0).eval()
    h, w = 64, 128
    tokens, sec = time_step(model, cfg, h, w, 9, 1, torch.device("cpu"), torch.float32)
    vae = random_init(vae_class(cfg)(cfg.vae), 1).eval()
    zs, vs, dsec = time_decode(vae, cfg, h, w, 9, torch.device("cpu"))
    full = case.cfg
    lt, lh, lw = latent_shape(full, case.height, case.width, case.frames)
    full_tokens = lt * (lh // 2) * (lw // 2)
    print(f"{case.label}, tiny config on CPU (code path only): {tokens} tokens, guided step "
          f"{sec * 1000:.1f} ms; VAE decode {zs} → {vs} {dsec * 1000:.0f} ms. At full size a guided "
          f"{case.width}x{case.height} x {case.frames} step is {full_tokens} tokens, "
          f"{2 * forward_flops(full.transformer, full_tokens) / 1e15:.2f} PFLOP")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="a14b,5b", help="comma list of a14b, 5b")
    ap.add_argument("--peak-tflops", type=float, default=989.0,
                    help="assumed dense bf16 peak, TFLOP/s (H100 SXM: 989)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-vae", action="store_true")
    ap.add_argument("--tiny", action="store_true", help="run the tiny CPU check even with CUDA")
    ap.add_argument("--modes", action="store_true",
                    help="the sampling modes (standard, cached, distilled): forwards per job, tiny CPU step "
                         "time, and with CUDA the 720p A14B distilled job end to end (bench/video/modes.py)")
    ap.add_argument("--load", action="store_true",
                    help="with --modes on CUDA: only the distilled mode's load-time costs (adapter merge, pinning)")
    args = ap.parse_args()
    if args.modes:
        import modes
        return modes.main(tiny_only=args.tiny, load_only=args.load)
    cases = [CASES[m.strip().lower()] for m in args.model.split(",")]
    if args.tiny or not torch.cuda.is_available():
        if not torch.cuda.is_available():
            print("CUDA is not available: the full-size figures need a GPU (bf16 weights alone are "
                  "28.6 GB for an A14B expert, 10.0 GB for the 5B). Running the tiny configs on CPU "
                  "instead; no full-size figure is printed.")
        for case in cases:
            run_cpu_tiny(case)
        return 0
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"sdpa: {hasattr(torch.nn.functional, 'scaled_dot_product_attention')}")
    for case in cases:
        run_cuda(case, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
