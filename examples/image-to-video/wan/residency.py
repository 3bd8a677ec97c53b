"""Where idle model parts live. On a card too small for everything (two 28.6 GB A14B experts,
the 11 GB umT5 and 720p activations do not fit in 80 GB), idle modules stay in host memory; their
host copies are pinned so a swap in is one DMA copy at the link's speed (28.6 GB: 0.5 s pinned,
9.1 s pageable on the H100 of issue 21), and a swap out copies nothing back — weights never change,
so the parameters just point at their host copies again. On a card with room for all of it, the
modules stay resident (`plan_residency`). bench/video/README.md, "Loading and offload".

A part's host copy is one flat buffer that every tensor views (`pin`): torch's pinned allocator
rounds each allocation up to a power of two, so pinning tensor by tensor took 40.7 GiB for a
26.6 GiB expert (and one 26.6 GiB allocation from it would take 32 GiB). The buffer is anonymous
memory registered with the CUDA driver instead, so its pinned bytes are the tensors' bytes."""
import mmap
from typing import Dict, Iterator, List, Sequence, Tuple

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


# Each tensor starts at a multiple of this many bytes in its part's buffer: the alignment torch's
# CPU allocator gives a tensor of its own, so vectorised kernels see the same addresses.
ALIGN = 64


def packed_layout(tensors: Sequence[torch.Tensor]) -> Tuple[List[int], int]:
    """Each tensor's byte offset in one buffer, and the buffer's size."""
    offsets, end = [], 0
    for t in tensors:
        start = -(-end // ALIGN) * ALIGN
        offsets.append(start)
        end = start + t.numel() * t.element_size()
    return offsets, end


class _HostRegion(mmap.mmap):
    """Anonymous host memory that is unregistered from the CUDA driver before it is unmapped, when
    the last tensor viewing it goes."""
    registered = 0  # the address registered with the driver, 0 when none

    def register(self, address: int, size: int) -> None:
        err = int(torch.cuda.cudart().cudaHostRegister(address, size, 0))
        if err:
            raise RuntimeError(
                f"could not page-lock {size / 2**30:.1f} GiB of host memory for an offloaded model part "
                f"(CUDA error {err}): give the worker that much more free host memory, or set WAN_OFFLOAD=0 "
                f"on a card with room for every part")
        self.registered = address

    def __del__(self):
        if self.registered:
            try:
                torch.cuda.cudart().cudaHostUnregister(self.registered)
            except Exception:  # the CUDA context is already gone at interpreter exit
                pass


def host_buffer(nbytes: int) -> torch.Tensor:
    """nbytes of page-aligned host memory as a uint8 tensor, page-locked when CUDA is there."""
    if nbytes == 0:
        return torch.empty(0, dtype=torch.uint8)
    region = _HostRegion(-1, nbytes)
    flat = torch.frombuffer(region, dtype=torch.uint8)  # holds `region` while any view lives
    if torch.cuda.is_available():
        flat.fill_(0)  # fault the pages in with torch's threaded fill; registering faults them on one thread
        region.register(flat.data_ptr(), nbytes)
    return flat


@torch.no_grad()
def pack(module: nn.Module, allocate=host_buffer) -> torch.Tensor:
    """Make every tensor of a CPU or meta `module` a view of one flat buffer from `allocate(nbytes)`,
    with its own dtype and shape (CPU values are copied in; meta ones stay unset, for `load_into` to
    read into). A tensor registered under two names stays one tensor. Returns the buffer."""
    slots = list(_slots(module))
    distinct = list({id(table[name]): table[name] for table, name in slots}.values())
    offsets, total = packed_layout(distinct)
    flat = allocate(total)
    homes = {}
    for t, at in zip(distinct, offsets):
        home = flat[at:at + t.numel() * t.element_size()].view(t.dtype).view(t.shape)
        if t.device.type != "meta":
            home.copy_(t)
        homes[id(t)] = nn.Parameter(home, t.requires_grad) if isinstance(t, nn.Parameter) else home
    for table, name in slots:
        table[name] = homes[id(table[name])]
    return flat


def pin(module: nn.Module) -> nn.Module:
    """An offloaded part's home: its tensors (CPU or meta) packed into one page-locked buffer
    (`pack`; on a machine without CUDA, plain host memory)."""
    pack(module)
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
