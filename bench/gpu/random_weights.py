"""Random weights at a config's published shapes and layout, written where the example reads them
(issue 40: no model hub is reachable from the GPU machine, and only the times mean anything):

    python3 random_weights.py <folder> [wan2.2-i2v-a14b] [--adapters <folder>] [--link-experts]

Experts as ~4 GiB safetensors shards with their index, bf16, made tensor by tensor (on the GPU when
there is one: CPU normal sampling of 28.6 GB takes minutes); T5 and VAE as `.pth` state dicts; a
byte-level tokenizer.json (the published one cannot be fetched; a random model reads any ids).
`--link-experts` writes the first expert once and hard-links its shards as the others: two A14B
experts, T5 and VAE are ~70 GB, over the GPU machine's 64 GiB disk; with the link, ~41 GB.
`--adapters` also writes rank-64 Lightning-layout adapters (one file per expert, fp32 as published)."""
import argparse
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "image-to-video")
sys.path[:0] = [os.path.join(EXAMPLE, "tests"), EXAMPLE]  # the repository's example: its code and its test helpers

from wan.clip import ClipVision  # noqa: E402
from wan.config import get_config  # noqa: E402
from wan.t5 import T5Encoder  # noqa: E402
from wan.loader import vae_class  # noqa: E402
from wan.transformer import WanTransformer  # noqa: E402
from wan.weights import empty_init, write_safetensors  # noqa: E402
from tiny_checkpoint import write_tokenizer  # noqa: E402  (the byte-level tokenizer.json of the tiny T5)

SHARD_BYTES = 4 << 30
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
ADAPTED = ("self_attn.q", "self_attn.k", "self_attn.v", "self_attn.o", "cross_attn.q", "cross_attn.k",
           "cross_attn.v", "cross_attn.o", "ffn.0", "ffn.2")


def shapes(cls, part) -> dict:
    with empty_init("meta"):
        model = cls(part)
    named = list(model.named_parameters()) + list(model.named_buffers())
    return {name: tuple(t.shape) for name, t in named}


def random(shape, dtype) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device=DEVICE).normal_(0.0, 0.02).cpu()


def write_expert(folder: str, named: dict) -> None:
    os.makedirs(folder, exist_ok=True)
    shard, size, index, n = {}, 0, {}, 0

    def flush():
        nonlocal shard, size, n
        n += 1
        name = f"diffusion_pytorch_model-{n:05d}.safetensors"
        write_safetensors(os.path.join(folder, name), shard)
        index.update({k: name for k in shard})
        shard, size = {}, 0

    for key, shape in named.items():
        shard[key] = random(shape, torch.bfloat16)
        size += shard[key].numel() * 2
        if size >= SHARD_BYTES:
            flush()
    if shard:
        flush()
    with open(os.path.join(folder, "diffusion_pytorch_model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": index}, f)


def link_expert(source: str, folder: str) -> None:
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(source):
        os.link(os.path.join(source, name), os.path.join(folder, name))


def write_adapters(folder: str, cfg, rank: int = 64) -> None:
    os.makedirs(folder, exist_ok=True)
    named = shapes(WanTransformer, cfg.transformer)
    for d in cfg.expert_dirs:
        tensors = {}
        for key, shape in named.items():
            base = key[:-len(".weight")]
            if key.endswith(".weight") and base.split(".", 2)[-1] in ADAPTED:
                tensors[f"diffusion_model.{base}.lora_down.weight"] = random((rank, shape[1]), torch.float32)
                tensors[f"diffusion_model.{base}.lora_up.weight"] = random((shape[0], rank), torch.float32)
                tensors[f"diffusion_model.{base}.alpha"] = torch.tensor(float(rank))
        write_safetensors(os.path.join(folder, f"{d or 'model'}.safetensors"), tensors)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("config", nargs="?", default="wan2.2-i2v-a14b")
    ap.add_argument("--adapters", metavar="FOLDER", help="also write rank-64 adapters there")
    ap.add_argument("--link-experts", action="store_true", help="the experts share one set of shards (hard links)")
    args = ap.parse_args()
    cfg = get_config(args.config)
    t0 = time.perf_counter()
    experts = shapes(WanTransformer, cfg.transformer)
    first = None
    for d in cfg.expert_dirs:
        folder = os.path.join(args.folder, d) if d else args.folder
        if first is not None and args.link_experts:
            link_expert(first, folder)
        else:
            write_expert(folder, experts)
            first = folder
    parts = [(T5Encoder, cfg.t5, cfg.t5_file, torch.bfloat16, ""), (vae_class(cfg), cfg.vae, cfg.vae_file, torch.float32, "")]
    if cfg.clip is not None:
        parts.append((ClipVision, cfg.clip, cfg.clip_file, torch.float16, "visual."))
    for cls, part, file, dtype, prefix in parts:
        torch.save({prefix + k: random(s, dtype) for k, s in shapes(cls, part).items()}, os.path.join(args.folder, file))
    write_tokenizer(os.path.join(args.folder, cfg.tokenizer_dir))
    if args.adapters:
        write_adapters(args.adapters, cfg)
    print(f"random_weights: {cfg.name} at {args.folder} in {time.perf_counter() - t0:.1f} s on {DEVICE}", flush=True)


if __name__ == "__main__":
    main()
