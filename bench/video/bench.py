"""Wan 2.2 I2V-A14B speed benchmark: one guided denoising step (cond+uncond batched) at 720p and
480p x 81 frames with a full-size expert (random bf16 weights), and a VAE decode of the 720p latent.
Prints seconds per step and the share of the bf16 FLOP floor.

    python3 bench/video/bench.py [--peak-tflops 989] [--res 720p,480p] [--repeat 3] [--no-vae]

Without CUDA it says so, runs the tiny config on CPU to show the code path works, and exits 0."""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "image-to-video")
sys.path.insert(0, APP)

import torch  # noqa: E402

from wan.config import TINY, WAN22_I2V_A14B  # noqa: E402
from wan.transformer import WanTransformer  # noqa: E402
from wan.vae import WanVAE  # noqa: E402
from wan.weights import empty_init, materialize, random_init, random_init_fast  # noqa: E402

# (area W*H, the 16:9 output it gives) → latent grid for 81 frames
RESOLUTIONS = {"720p": (720, 1280), "480p": (480, 832)}
FRAMES = 81


def latent_shape(h, w, frames=FRAMES, stride=(4, 8, 8)):
    return ((frames - 1) // stride[0] + 1, h // stride[1], w // stride[2])


def forward_flops(cfg, tokens: int, text_len: int = 512) -> float:
    """Matmul FLOPs (2 per multiply-add) of one transformer forward for one sample."""
    d, f, L = cfg.dim, cfg.ffn_dim, cfg.num_layers
    per_token = (8 * d * d            # self-attn q, k, v, o
                 + 4 * tokens * d     # self-attn QK^T and PV
                 + 4 * d * d          # cross-attn q, o
                 + 4 * text_len * d   # cross-attn QK^T and PV over 512 text tokens
                 + 4 * d * f)         # FFN
    per_sample = 4 * text_len * d * d  # cross-attn k, v over the text (once per sample)
    embed = tokens * 2 * d * (cfg.in_dim * 4 + 64)  # patch embed + head
    return L * (tokens * per_token + per_sample) + embed


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_step(model, cfg, h, w, repeat, device, dtype):
    t_lat, lh, lw = latent_shape(h, w)
    tokens = t_lat * (lh // 2) * (lw // 2)
    x = torch.randn(2, cfg.in_dim, t_lat, lh, lw, device=device, dtype=dtype)
    ctx = torch.randn(2, cfg.text_len, cfg.text_dim, device=device, dtype=dtype)
    t = torch.full((2,), 950.0, device=device)
    times = []
    with torch.inference_mode():
        for i in range(repeat + 1):  # first run warms kernels / allocator
            sync()
            t0 = time.perf_counter()
            v = model(x, t, ctx)
            v = v[1] + 3.5 * (v[0] - v[1])
            sync()
            if i:
                times.append(time.perf_counter() - t0)
    return tokens, min(times)


def run_cuda(args):
    device, dtype = torch.device("cuda"), torch.bfloat16
    cfg = WAN22_I2V_A14B.transformer
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"sdpa: {hasattr(torch.nn.functional, 'scaled_dot_product_attention')}")
    t0 = time.perf_counter()
    with empty_init("meta"):
        model = WanTransformer(cfg)
    model = random_init_fast(materialize(model, device, dtype), seed=0).eval()
    n = sum(p.numel() for p in model.parameters())
    print(f"built 2.2 A14B expert: {n / 1e9:.2f}B params bf16 in {time.perf_counter() - t0:.1f} s; "
          f"memory {torch.cuda.memory_allocated() / 2**30:.1f} GiB")
    peak = args.peak_tflops * 1e12
    for res in args.res.split(","):
        h, w = RESOLUTIONS[res]
        tokens, sec = time_step(model, cfg, h, w, args.repeat, device, dtype)
        flops = 2 * forward_flops(cfg, tokens)
        print(f"{res} x {FRAMES} frames: {tokens} tokens, guided step {sec:.3f} s, "
              f"{flops / 1e15:.2f} PFLOP → {flops / sec / 1e12:.0f} TFLOP/s = "
              f"{100 * flops / sec / peak:.1f}% of {args.peak_tflops:.0f} TFLOP/s; "
              f"40 steps ≈ {40 * sec:.0f} s (floor {40 * flops / peak:.0f} s); "
              f"peak mem {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
    if not args.no_vae:
        del model
        torch.cuda.empty_cache()
        vae = random_init_fast(materialize_meta(WanVAE, WAN22_I2V_A14B.vae, device), 1, std=0.02).eval()
        z = torch.randn(1, 16, *latent_shape(*RESOLUTIONS["720p"]), device=device)
        torch.cuda.reset_peak_memory_stats()
        sync()
        t0 = time.perf_counter()
        out = vae.decode(z)
        sync()
        print(f"VAE decode 720p latent {tuple(z.shape)} → {tuple(out.shape)}: "
              f"{time.perf_counter() - t0:.2f} s fp32, peak mem {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")


def materialize_meta(cls, cfg, device):
    with empty_init("meta"):
        m = cls(cfg)
    return materialize(m, device, torch.float32)


def run_cpu_tiny():
    cfg = TINY.transformer
    model = random_init(WanTransformer(cfg), 0).eval()
    tokens, sec = time_step(model, cfg, 64, 64, 2, torch.device("cpu"), torch.float32)
    # tiny path uses the same code with the tiny config: 64x64 px, 81 frames
    print(f"tiny config on CPU: {tokens} tokens, guided step {sec * 1000:.1f} ms, "
          f"{2 * forward_flops(cfg, tokens) / 1e9:.3f} GFLOP (formula check only)")
    vae = random_init(WanVAE(TINY.vae), 1).eval()
    z = torch.randn(1, 16, *latent_shape(64, 64))
    t0 = time.perf_counter()
    out = vae.decode(z)
    print(f"tiny VAE decode {tuple(z.shape)} → {tuple(out.shape)} in {time.perf_counter() - t0:.2f} s")
    full = 2 * forward_flops(WAN22_I2V_A14B.transformer, 21 * 45 * 80)
    print(f"(for reference: a guided 720p step of the full model is {full / 1e15:.2f} PFLOP)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peak-tflops", type=float, default=989.0,
                    help="assumed dense bf16 peak, TFLOP/s (H100 SXM: 989)")
    ap.add_argument("--res", default="720p,480p", help="comma list of 720p, 480p")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-vae", action="store_true")
    ap.add_argument("--tiny", action="store_true", help="run the tiny CPU check even with CUDA")
    args = ap.parse_args()
    if args.tiny or not torch.cuda.is_available():
        if not torch.cuda.is_available():
            print("CUDA is not available: the full-size benchmark needs a GPU (about 40 GiB for the "
                  "expert and 720p activations). Running the tiny config on CPU instead.")
        run_cpu_tiny()
        return 0
    run_cuda(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
