"""Checkpoint I/O: a stdlib safetensors reader, .pth loading, meta-device construction,
deterministic random initialisation (tiny mode, benchmarks) and strict key-for-key loading."""
import contextlib
import ctypes
import glob
import json
import mmap
import os
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

import torch
import torch.nn as nn

_ST_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}


def read_safetensors_header(path: str) -> Tuple[dict, int]:
    """Header dict and the byte offset where tensor data starts (8-byte LE length + JSON)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header, 8 + n


def iter_safetensors(path: str) -> Iterator[Tuple[str, torch.Tensor]]:
    """Yield (name, tensor) without reading the whole file: tensors view an mmap, copy on use."""
    header, base = read_safetensors_header(path)
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        for name, info in header.items():
            dtype = _ST_DTYPES[info["dtype"]]
            start, end = info["data_offsets"]
            count = (end - start) // torch.tensor([], dtype=dtype).element_size()
            buf = bytearray(mm[base + start:base + end]) if count else bytearray()
            t = torch.frombuffer(buf, dtype=dtype, count=count) if count else torch.empty(0, dtype=dtype)
            yield name, t.reshape(info["shape"])
    finally:
        mm.close()


def write_safetensors(path: str, tensors: Dict[str, torch.Tensor]) -> None:
    """Writer used by tests (and to export tiny weights)."""
    rev = {v: k for k, v in _ST_DTYPES.items()}
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""  # 0-d too (alpha)
        header[name] = {"dtype": rev[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def iter_checkpoint(path: str) -> Iterator[Tuple[str, torch.Tensor]]:
    """A .safetensors file, a folder of shards (with or without an index), or a .pth file."""
    if os.path.isdir(path):
        files = sorted(glob.glob(os.path.join(path, "*.safetensors")))
        if not files:
            raise FileNotFoundError(f"no *.safetensors shards in {path}")
        for f in files:
            yield from iter_safetensors(f)
    elif path.endswith(".safetensors"):
        yield from iter_safetensors(path)
    else:
        try:
            sd = torch.load(path, map_location="cpu", weights_only=True)
        except TypeError:  # torch without weights_only
            sd = torch.load(path, map_location="cpu")
        yield from sd.items()


def load_into(model: nn.Module, path: str, prefix: str = "", threads: Optional[int] = None) -> None:
    """Copy checkpoint tensors into `model` key for key; any missing/unexpected key or wrong shape
    is an error, found from the headers before a byte of tensor data is read. With `prefix`, only
    keys under it are used (e.g. "visual." of the CLIP checkpoint).

    Safetensors are read at disk speed (docs: bench/video/README.md, "Loading"): each tensor's
    bytes go with positioned reads straight into the parameter's own memory when it is on the CPU
    in the file's dtype (no intermediate copy), otherwise through a staging buffer (pinned when
    the parameter is on CUDA) and one copy; several reads run at once (the GIL is released)."""
    params = dict(model.named_parameters())
    params.update(dict(model.named_buffers()))
    if os.path.isdir(path) or path.endswith(".safetensors"):
        _load_safetensors(params, path, prefix, threads)
        return
    seen, unexpected = set(), []
    for name, t in iter_checkpoint(path):
        key = _target(params, name, prefix, unexpected)
        if key is None:
            continue
        _check_shape(path, key, params[key], t.shape)
        with torch.no_grad():
            params[key].copy_(t.to(params[key].dtype))
        seen.add(key)
    _check_complete(path, params, seen, unexpected)


def _target(params: dict, name: str, prefix: str, unexpected: List[str]) -> Optional[str]:
    """The model's key for a checkpoint name: None when outside `prefix` or not the model's (noted)."""
    if prefix:
        if not name.startswith(prefix):
            return None
        name = name[len(prefix):]
    if name not in params:
        unexpected.append(name)
        return None
    return name


def _check_shape(path: str, name: str, p: torch.Tensor, shape) -> None:
    if tuple(p.shape) != tuple(shape):
        raise ValueError(f"{path}: {name} has shape {tuple(shape)}, model expects {tuple(p.shape)}")


def _check_complete(path: str, params: dict, seen: set, unexpected: List[str]) -> None:
    missing = sorted(set(params) - seen)
    if missing or unexpected:
        raise ValueError(f"{path} does not match the model: missing {missing[:5]} "
                         f"({len(missing)}), unexpected {unexpected[:5]} ({len(unexpected)})")


# A read of at most this many bytes at a time: big enough for the disk to stream, small enough
# that several run at once and a staging buffer stays small.
READ_CHUNK = 32 << 20
_DEFAULT_THREADS = 8


@dataclass(frozen=True)
class _Read:
    fd: int
    offset: int          # in the file
    size: int
    target: torch.Tensor  # the parameter
    start: int           # byte offset inside the parameter
    file_dtype: torch.dtype


def _shard_files(path: str) -> List[str]:
    if not os.path.isdir(path):
        return [path]
    files = sorted(glob.glob(os.path.join(path, "*.safetensors")))
    if not files:
        raise FileNotFoundError(f"no *.safetensors shards in {path}")
    return files


def _load_safetensors(params: dict, path: str, prefix: str, threads: Optional[int]) -> None:
    seen, unexpected, reads, fds = set(), [], [], []
    try:
        for file in _shard_files(path):
            header, base = read_safetensors_header(file)
            fd = os.open(file, os.O_RDONLY)
            fds.append(fd)
            for name, info in header.items():
                key = _target(params, name, prefix, unexpected)
                if key is None:
                    continue
                p = params[key]
                _check_shape(file, key, p, info["shape"])
                seen.add(key)
                start, end = info["data_offsets"]
                for at in range(0, end - start, READ_CHUNK):
                    reads.append(_Read(fd, base + start + at, min(READ_CHUNK, end - start - at), p, at,
                                       _ST_DTYPES[info["dtype"]]))
        _check_complete(path, params, seen, unexpected)
        workers = threads or _DEFAULT_THREADS
        with ThreadPoolExecutor(workers) as pool:
            # Each thread walks its own stretch of the file list: reads stay sequential per thread.
            per = -(-len(reads) // workers) if reads else 1
            list(pool.map(_run_reads, [reads[i:i + per] for i in range(0, len(reads), per)]))
    finally:
        for fd in fds:
            os.close(fd)


def _pread_into(fd: int, view: memoryview, offset: int) -> None:
    while len(view):
        n = os.preadv(fd, [view], offset)
        if n <= 0:
            raise EOFError(f"checkpoint file ends before offset {offset + len(view)}")
        view, offset = view[n:], offset + n


def _bytes_of(t: torch.Tensor, start: int, size: int) -> memoryview:
    """A writable view of `size` bytes of a CPU tensor's memory from byte `start`."""
    return memoryview((ctypes.c_char * size).from_address(t.data_ptr() + start)).cast("B")


@torch.no_grad()
def _run_reads(reads: List[_Read]) -> None:
    staging: Optional[torch.Tensor] = None
    copied = None  # the CUDA event of the last copy out of `staging`
    for r in reads:
        direct = r.target.device.type == "cpu" and r.target.dtype == r.file_dtype and r.target.is_contiguous()
        if direct:
            _pread_into(r.fd, _bytes_of(r.target, r.start, r.size), r.offset)
            continue
        cuda = r.target.device.type == "cuda"
        if staging is None:
            staging = torch.empty(READ_CHUNK, dtype=torch.uint8, pin_memory=cuda)
        if copied is not None:
            copied.synchronize()  # the previous copy must have left the buffer
        _pread_into(r.fd, _bytes_of(staging, 0, r.size), r.offset)
        itemsize = torch.tensor([], dtype=r.file_dtype).element_size()
        src = staging[:r.size].view(r.file_dtype)
        first = r.start // itemsize
        r.target.view(-1)[first:first + src.numel()].copy_(src, non_blocking=cuda)
        if cuda:
            copied = torch.cuda.Event()
            copied.record()
    if copied is not None:
        copied.synchronize()


@contextlib.contextmanager
def empty_init(device="meta"):
    """Build modules with parameters on `device` (meta: no memory, no init cost).

    torch 1.13 has no `with torch.device(...)`; registering each parameter straight onto the
    target device does the same and works on 2.x too."""
    orig = nn.Module.register_parameter

    def register(self, name, param):
        if param is not None:
            param = nn.Parameter(torch.empty_like(param, device=device), param.requires_grad)
        orig(self, name, param)

    nn.Module.register_parameter = register
    try:
        yield
    finally:
        nn.Module.register_parameter = orig


def materialize(model: nn.Module, device, dtype=None) -> nn.Module:
    """Allocate a meta-built model's storage on `device` (values uninitialised)."""
    if dtype is not None:
        model = model.to(dtype)  # on meta first, so no full-size fp32 copy is ever allocated
    return model.to_empty(device=device)


@torch.no_grad()
def random_init(model: nn.Module, seed: int) -> nn.Module:
    """Deterministic weights from `seed`, parameter by parameter in name order.

    Norm gains 1, biases 0, matrices ~ N(0, 1/fan_in): outputs stay O(1) so the tiny pipeline
    produces a well-formed (if meaningless) video."""
    gen = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        leaf = name.rsplit(".", 1)[-1]
        if "norm" in name and leaf in ("weight", "gamma") or leaf == "gamma":
            p.fill_(1.0)
        elif leaf == "bias":
            p.zero_()
        else:
            fan_in = p[0].numel() if p.dim() > 1 else p.shape[-1]
            t = torch.randn(p.shape, generator=gen) / max(fan_in, 1) ** 0.5
            p.copy_(t.to(p.dtype))
    return model


def random_init_fast(model: nn.Module, seed: int, std: float = 0.02) -> nn.Module:
    """On-device normal init for full-size benchmark models (CPU-side generation is too slow)."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith("gamma"):
                p.fill_(1.0)
            elif name.endswith("bias"):
                p.zero_()
            else:
                p.normal_(0.0, std)
    return model
