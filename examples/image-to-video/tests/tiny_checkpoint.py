"""Writes a tiny config's model (the same seeded random weights as `WAN_CONFIG=tiny` makes in
memory) as a checkpoint folder in the published layout: the experts as sharded safetensors with
their index, the umT5 and VAE `.pth` files, CLIP for 2.1, and `google/umt5-xxl/tokenizer.json`.
test/e2e/image-to-video-volume.test.ts uploads it to a network volume and deploys the example
reading it. Also random LoRA adapters in the Lightning layout (`write_adapter`). Usage:
python tiny_checkpoint.py [--adapters] <folder> [tiny|tiny-2.1|tiny-5b]  (--help says more)"""
import argparse
import json
import os
import sys

CONFIGS = ("tiny", "tiny-2.1", "tiny-5b")


def arguments(argv: list) -> argparse.Namespace:
    """The command line, read before torch loads: `--help` and a wrong argument answer at once, write nothing."""
    parser = argparse.ArgumentParser(
        prog="tiny_checkpoint.py",
        description="Write a tiny config's model as a checkpoint folder in the published layout, or (--adapters) "
                    "random LoRA adapters in the Lightning layout for it, one per expert.")
    parser.add_argument("folder", help="the folder to write (created)")
    parser.add_argument("config", nargs="?", default="tiny", choices=CONFIGS, help="the tiny config (default: tiny)")
    parser.add_argument("--adapters", action="store_true",
                        help="write high_noise_model.safetensors and low_noise_model.safetensors (WAN_LORA's folder layout)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    ARGS = arguments(sys.argv[1:])

import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from wan.config import get_config  # noqa: E402
from wan.loader import _tiny  # noqa: E402
from wan.weights import write_safetensors  # noqa: E402


def write_shards(folder: str, state: dict, shards: int = 2) -> None:
    """`diffusion_pytorch_model-0000N-of-0000M.safetensors` and their index, as published."""
    os.makedirs(folder, exist_ok=True)
    keys = sorted(state)
    weight_map = {}
    for i in range(shards):
        name = f"diffusion_pytorch_model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = {k: state[k].contiguous() for k in keys[i::shards]}
        write_safetensors(os.path.join(folder, name), part)
        weight_map.update({k: name for k in part})
    total = sum(t.numel() * t.element_size() for t in state.values())
    with open(os.path.join(folder, "diffusion_pytorch_model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


def write_tokenizer(folder: str) -> None:
    """A umT5-style Unigram tokenizer.json over the 259 byte-level ids of the tiny T5."""
    os.makedirs(folder, exist_ok=True)
    vocab = [["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]] + [[f"<0x{b:02X}>", -10.0] for b in range(256)]
    spec = {"version": "1.0", "model": {"type": "Unigram", "unk_id": 2, "vocab": vocab, "byte_fallback": True},
            "added_tokens": [{"id": 0, "content": "<pad>"}, {"id": 1, "content": "</s>"}, {"id": 2, "content": "<unk>"}]}
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(spec, f)


ADAPTED = ("self_attn.q", "self_attn.k", "self_attn.v", "self_attn.o", "cross_attn.q", "cross_attn.k",
           "cross_attn.v", "cross_attn.o", "ffn.0", "ffn.2")


@torch.no_grad()
def write_adapter(path: str, model, rank: int = 4, alpha: float = 8.0, seed: int = 0,
                  device: str = "cpu", scale: float = 0.05) -> int:
    """A random LoRA for `model`'s block Linears in the published Lightning layout
    (`diffusion_model.blocks.N.<linear>.lora_down.weight` / `.lora_up.weight` / `.alpha`, fp32, as
    the distillation authors' loader requires). Returns the number of adapted weights."""
    gen = torch.Generator(device=device).manual_seed(seed)
    tensors = {}
    for i, block in enumerate(model.blocks):
        for name in ADAPTED:
            w = block.get_submodule(name).weight
            base = f"diffusion_model.blocks.{i}.{name}"
            tensors[base + ".lora_down.weight"] = torch.randn(rank, w.shape[1], generator=gen, device=device) * scale
            tensors[base + ".lora_up.weight"] = torch.randn(w.shape[0], rank, generator=gen, device=device) * scale
            tensors[base + ".alpha"] = torch.tensor(float(alpha))
    write_safetensors(path, tensors)
    return len(model.blocks) * len(ADAPTED)


def write_tiny_adapters(folder: str, config: str = "tiny", seed: int = 0) -> list:
    """One adapter per expert of the tiny model, named as the Lightning folders name them
    (`high_noise_model.safetensors`, `low_noise_model.safetensors`)."""
    cfg = get_config(config)
    comps = _tiny(cfg, torch.device("cpu"), torch.float32)
    os.makedirs(folder, exist_ok=True)
    paths = []
    for i, (d, expert) in enumerate(zip(cfg.expert_dirs, comps.experts)):
        paths.append(os.path.join(folder, f"{d or 'model'}.safetensors"))
        write_adapter(paths[-1], expert, seed=seed + i)
    return paths


def write_tiny_checkpoint(root: str, config: str = "tiny") -> None:
    cfg = get_config(config)
    comps = _tiny(cfg, torch.device("cpu"), torch.float32)
    for d, expert in zip(cfg.expert_dirs, comps.experts):
        write_shards(os.path.join(root, d) if d else root, expert.state_dict())
    torch.save(comps.t5.state_dict(), os.path.join(root, cfg.t5_file))
    torch.save(comps.vae.state_dict(), os.path.join(root, cfg.vae_file))
    if comps.clip is not None:
        torch.save({f"visual.{k}": v for k, v in comps.clip.state_dict().items()}, os.path.join(root, cfg.clip_file))
    write_tokenizer(os.path.join(root, cfg.tokenizer_dir))


if __name__ == "__main__":
    (write_tiny_adapters if ARGS.adapters else write_tiny_checkpoint)(ARGS.folder, ARGS.config)
