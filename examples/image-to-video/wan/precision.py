"""Autocast regions as the authors' code uses them: half-precision matmuls for the transformer
(bf16) and CLIP (fp16) on CUDA, explicit fp32 islands inside them."""
import contextlib

import torch


def autocast_to(dtype: torch.dtype, device: torch.device):
    """Autocast to a half dtype; for fp32, leave any enclosing autocast (the region runs in fp32)."""
    if dtype == torch.float32:
        if torch.is_autocast_enabled() or torch.is_autocast_cpu_enabled():
            return torch.autocast(device.type, enabled=False)
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)
