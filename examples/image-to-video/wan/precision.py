"""Autocast regions as the authors' code uses them: half-precision matmuls for the transformer
(bf16) and CLIP (fp16) on CUDA, explicit fp32 islands inside them."""
import contextlib

import torch


def _autocast_enabled(device_type: str) -> bool:
    """torch >= 2.4 asks per device type (the CPU-specific query is deprecated there); 1.13 has
    one query for CUDA and one for the CPU."""
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:
        return torch.is_autocast_enabled() if device_type == "cuda" else torch.is_autocast_cpu_enabled()


def autocast_to(dtype: torch.dtype, device: torch.device):
    """Autocast to a half dtype; for fp32, leave any enclosing autocast (the region runs in fp32)."""
    if dtype == torch.float32:
        if _autocast_enabled("cuda") or _autocast_enabled("cpu"):
            return torch.autocast(device.type, enabled=False)
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)
