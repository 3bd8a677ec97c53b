"""Where idle model parts live. On a card too small for everything (two 28.6 GB A14B experts,
the 11 GB umT5 and 720p activations do not fit in 80 GB), idle modules stay in host memory; their
host copies are pinned so a swap in is one DMA copy at the link's speed (28.6 GB: 0.5 s pinned,
9.1 s pageable on the H100 of issue 21), and a swap out copies nothing back — weights never change,
so the parameters just point at their host copies again. On a card with room for all of it, the
modules stay resident (`plan_residency`). bench/video/README.md, "Loading and offload"."""
from typing import Dict, Iterator, Tuple

import torch
import torch.nn as nn

# What a 720p A14B job needs next to the weights on the card: activations of 75,600 tokens, the
# VAE encode and decode (WAN_OFFLOAD=0 ran out of memory at the VAE encode on 80 GB).
ACTIVATION_HEADROOM = 24 << 30


def _slots(module: nn.Module) -> Iterator[Tuple[Dict[str, torch.Tensor], str]]:
    for m in module.modules():
        for table in (m._parameters, m._buffers):
            for name, t in table.items():
                if t is not None:
                    yield table, name


def pin(module: nn.Module) -> nn.Module:
    """Move a CPU module's tensors into page-locked memory (no-op without CUDA)."""
    if torch.cuda.is_available():
        for table, name in _slots(module):
            t = table[name]
            if t.device.type == "cpu" and not t.is_pinned():
                t.data = t.data.pin_memory()
    return module


class HostCopies:
    """A module whose tensors' home is host memory and which visits a device while it is used."""

    def __init__(self, module: nn.Module):
        # The host tensors themselves (Parameters stay Parameters): a swap out restores these objects.
        self.host = [(table, name, table[name]) for table, name in _slots(module)]

    @torch.no_grad()
    def to_device(self, device: torch.device) -> None:
        for table, name, host in self.host:
            moved = host.data.to(device, non_blocking=True)
            table[name] = nn.Parameter(moved, requires_grad=False) if isinstance(host, nn.Parameter) else moved

    def to_host(self) -> None:
        for table, name, host in self.host:
            table[name] = host


def plan_residency(weight_bytes: int, card_bytes: int) -> bool:
    """Offload (True) unless every weight plus a 720p job's working memory fits on the card."""
    return weight_bytes + ACTIVATION_HEADROOM > card_bytes
