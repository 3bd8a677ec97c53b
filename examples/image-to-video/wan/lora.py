"""LoRA adapters merged into an expert's weights once, at load: the step-distilled Lightning
adapters (lightx2v/Wan2.2-Lightning, one file per A14B expert) make the experts sample in 4
unguided steps, at no cost per step.

File layout as published: `diffusion_model.<module>.lora_down.weight` (rank × in),
`….lora_up.weight` (out × rank) and `….alpha` (a scalar) per adapted Linear;
W ← W + (alpha / rank) · up @ down, computed in fp32 and rounded once into the weight's dtype, as
the distillation authors' loader merges (Wan2.2-Lightning's `load_and_merge_lora_weight`). LightX2V's
loader reads the same keys and also full-tensor deltas (`.diff` for a weight, `.diff_b` for a bias,
`.diff_m` for a modulation), and takes scale 1 where a pair has no alpha; both are accepted here.
The scale is alpha/rank as both loaders compute it, so an alpha of 0 changes nothing. Keys are
matched with or without the `diffusion_model.` prefix, but one file uses one spelling: a file with
both would name some weights twice. A key that adapts nothing in the model fails the load, naming
it: a silently ignored adapter would serve the wrong model. What the merge reads generously (no
alpha, factors stored in bf16 or fp16 and upcast to fp32) is said once per file on stderr, the
worker's log."""
import os
import sys
from typing import Dict, List, Optional, Set

import torch
import torch.nn as nn

from .weights import iter_safetensors

PREFIX = "diffusion_model."
PAIR = (".lora_down.weight", ".lora_up.weight")
DIFFS = {".diff": ".weight", ".diff_b": ".bias", ".diff_m": ".modulation"}


class AdapterError(RuntimeError):
    pass


_SAID: Set[str] = set()


def _say_once(text: str) -> None:
    if text not in _SAID:
        _SAID.add(text)
        print(f"wan/lora: {text}", file=sys.stderr, flush=True)


def _read(path: str) -> Dict[str, torch.Tensor]:
    """The file's tensors under bare keys; a file spelling keys both ways is refused."""
    tensors = dict(iter_safetensors(path))
    prefixed = [k for k in tensors if k.startswith(PREFIX)]
    if prefixed and len(prefixed) < len(tensors):
        bare = next(k for k in tensors if not k.startswith(PREFIX))
        raise AdapterError(f"{path}: mixes `{PREFIX}`-prefixed keys ({prefixed[0]}) with bare ones ({bare}); "
                           f"an adapter names its weights one way: rewrite it with one spelling")
    return {k[len(PREFIX):] if prefixed else k: v for k, v in tensors.items()}


def _factor_notes(path: str, tensors: Dict[str, torch.Tensor]) -> None:
    pairs = [k[:-len(PAIR[0])] for k in tensors if k.endswith(PAIR[0])]
    no_alpha = sum(1 for base in pairs if base + ".alpha" not in tensors)
    if no_alpha:
        _say_once(f"{path}: {no_alpha} of {len(pairs)} LoRA pairs have no alpha; merged at scale 1 (LightX2V's reading)")
    low = sorted({str(t.dtype).replace("torch.", "") for k, t in tensors.items()
                  if k.endswith(PAIR) and t.dtype in (torch.bfloat16, torch.float16)})
    if low:
        _say_once(f"{path}: LoRA factors stored in {'/'.join(low)}; upcast to float32 for the merge")


def _delta(tensors: Dict[str, torch.Tensor], base: str, shape: torch.Size, path: str,
           device: torch.device) -> torch.Tensor:
    down, up = tensors[base + PAIR[0]].to(device, torch.float32), tensors[base + PAIR[1]].to(device, torch.float32)
    if down.dim() != 2 or up.dim() != 2 or up.shape[1] != down.shape[0] or (up.shape[0], down.shape[1]) != tuple(shape):
        raise AdapterError(f"{path}: {base} has lora_up {tuple(up.shape)} and lora_down {tuple(down.shape)}, "
                           f"which do not make the model's {tuple(shape)}")
    alpha = tensors.get(base + ".alpha")
    scale = float(alpha) / down.shape[0] if alpha is not None else 1.0
    return scale * torch.matmul(up, down)


@torch.no_grad()
def merge_adapter(model: nn.Module, path: str, device: Optional[torch.device] = None) -> int:
    """Merge one adapter file into `model` in place; returns how many tensors it changed. The
    arithmetic runs on `device` (the GPU when there is one: 400 rank-64 products of an A14B expert)
    and each result goes back into the parameter where it lives."""
    if not os.path.isfile(path):
        raise AdapterError(f"adapter file not found: {path}")
    tensors = _read(path)
    params = dict(model.named_parameters())
    updates: Dict[str, str] = {}     # parameter name -> adapter base key
    unknown: List[str] = []
    for key in tensors:
        if key.endswith(PAIR[0]):
            base = key[:-len(PAIR[0])]
            name = base + ".weight"
            if base + PAIR[1] not in tensors or name not in params:
                unknown.append(key)
            else:
                updates[name] = base
        elif key.endswith(PAIR[1]) or key.endswith(".alpha"):
            base = key[:key.rindex(".lora_up") if key.endswith(PAIR[1]) else -len(".alpha")]
            if base + PAIR[0] not in tensors or base + ".weight" not in params:
                unknown.append(key)
        elif any(key.endswith(s) for s in DIFFS):
            suffix = next(s for s in DIFFS if key.endswith(s))
            name = key[:-len(suffix)] + DIFFS[suffix]
            if name not in params:
                unknown.append(key)
            else:
                updates[name] = key
        else:
            unknown.append(key)
    if unknown:
        shown = ", ".join(sorted(unknown)[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise AdapterError(f"{path}: {len(unknown)} adapter keys match no weight of the model ({shown}); "
                           f"is it the adapter for this model and expert?")
    if not updates:
        raise AdapterError(f"{path}: no LoRA pairs (lora_down/lora_up) or diffs in the file")
    _factor_notes(path, tensors)
    for name, source in updates.items():
        p = params[name]
        work = device or p.device
        if source in tensors:   # a full-tensor diff
            d = tensors[source].to(work, torch.float32)
            if d.shape != p.shape:
                raise AdapterError(f"{path}: {source} has shape {tuple(d.shape)}, the model's {name} {tuple(p.shape)}")
        else:   # the small factors travel, the product is made where the weight is merged
            d = _delta(tensors, source, p.shape, path, work)
        merged = (p.detach().to(work).float() + d).to(p.dtype)
        p.data.copy_(merged)
    return len(updates)


def adapter_files(spec: str, expert_dirs) -> List[str]:
    """WAN_LORA → one file per expert, in the config's expert order. Either a folder in the
    Lightning layout (`high_noise_model.safetensors`, `low_noise_model.safetensors`; one
    `*.safetensors` for a one-expert model) or the files themselves, comma separated."""
    spec = spec.strip()
    n = len(expert_dirs)
    if os.path.isdir(spec):
        if n > 1:
            files = [os.path.join(spec, f"{d}.safetensors") for d in expert_dirs]
        else:
            found = sorted(f for f in os.listdir(spec) if f.endswith(".safetensors"))
            files = [os.path.join(spec, f) for f in found[:1]] or [os.path.join(spec, "*.safetensors")]
    else:
        files = [f.strip() for f in spec.split(",") if f.strip()]
    if len(files) != n:
        raise AdapterError(f"WAN_LORA names {len(files)} adapter file(s); this model has {n} expert(s) "
                           f"({', '.join(d or 'model' for d in expert_dirs)}): give one file each, in that order, "
                           f"or a folder holding {', '.join(f'{d}.safetensors' for d in expert_dirs if d) or 'one *.safetensors'}")
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise AdapterError(f"WAN_LORA: adapter file(s) not found: {', '.join(missing)}")
    return files
