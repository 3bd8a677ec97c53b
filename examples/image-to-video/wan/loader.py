"""Building the model components for a config: real weights from a checkpoint folder in the
published layout, or deterministic random weights for the tiny config. Cached per process so a
warm worker never reloads between jobs."""
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import torch

from .clip import ClipVision
from .config import ModelConfig, get_config
from .t5 import T5Encoder
from .tokenizer import ByteTokenizer, load_tokenizer
from .transformer import WanTransformer
from .vae import WanVAE
from .vae22 import WanVAE22
from .lora import merge_adapter
from .residency import HostCopies, pin, plan_residency
from .weights import empty_init, load_into, materialize, random_init

TINY_SEED = 20240601  # fixed: tiny mode must give the same weights on every worker


class WeightsNotFound(RuntimeError):
    pass


@dataclass
class Components:
    cfg: ModelConfig
    device: torch.device
    dtype: torch.dtype
    experts: List[WanTransformer]      # [high_noise, low_noise] for 2.2, [model] for 2.1
    vae: WanVAE
    t5: T5Encoder
    tokenizer: Any
    clip: Optional[ClipVision] = None
    offload: bool = False
    warnings: List[str] = field(default_factory=list)
    # With offload: the host copies of the experts and T5, by id of the module (wan/residency.py).
    host_copies: Dict[int, HostCopies] = field(default_factory=dict)
    load_s: float = 0.0               # seconds this process spent building the components
    load_reported: bool = False       # the first job reports load_s in its timings
    adapters: List[str] = field(default_factory=list)   # LoRA files merged into the experts (wan/lora.py)


_CACHE: Dict[tuple, Components] = {}
_LOCK = threading.Lock()


def select_device():
    if torch.cuda.is_available():
        return torch.device("cuda"), torch.bfloat16
    return torch.device("cpu"), torch.float32


def vae_class(cfg: ModelConfig):
    return WanVAE22 if cfg.vae.version == "2.2" else WanVAE


def clip_dtype(device: torch.device, dtype: torch.dtype) -> torch.dtype:
    """The authors run CLIP in fp16 on CUDA (the transformer and T5 in bf16, the VAE in fp32)."""
    return torch.float16 if device.type == "cuda" and dtype != torch.float32 else dtype


def expected_files(cfg: ModelConfig, root: str) -> List[str]:
    paths = [os.path.join(root, d) if d else root for d in cfg.expert_dirs]
    paths += [os.path.join(root, cfg.t5_file), os.path.join(root, cfg.vae_file),
              os.path.join(root, cfg.tokenizer_dir, "tokenizer.json")]
    if cfg.clip is not None:
        paths.append(os.path.join(root, cfg.clip_file))
    return paths


def check_checkpoint(cfg: ModelConfig, root: Optional[str]) -> None:
    """Fail with one clear message listing where the weights are expected."""
    if not root:
        raise WeightsNotFound(
            f"no model weights configured for {cfg.name}: set WAN_CHECKPOINT_DIR to a folder in the "
            f"published layout ({', '.join(os.path.relpath(p, '/ckpt') for p in expected_files(cfg, '/ckpt'))}), "
            f"or set WAN_CONFIG=tiny for the random-weight test model")
    missing = [p for p in expected_files(cfg, root) if not os.path.exists(p)]
    for d in cfg.expert_dirs:
        p = os.path.join(root, d) if d else root
        if os.path.isdir(p) and not any(n.endswith(".safetensors") for n in os.listdir(p)):
            missing.append(os.path.join(p, "*.safetensors"))
    if missing:
        raise WeightsNotFound(f"model weights for {cfg.name} not found under {root}: missing "
                              + ", ".join(missing))


def _build(cls, cfg_part, device, dtype, path=None, seed=None, prefix=""):
    if seed is not None:
        m = random_init(cls(cfg_part), seed)
        return m.to(device=device, dtype=dtype).eval()
    with empty_init("meta"):
        m = cls(cfg_part)
    if torch.device(device).type == "cpu":
        m = pin(m.to(dtype))  # one page-locked buffer, the home of an offloaded part: read straight into it
    else:
        m = materialize(m, device, dtype)
    load_into(m, path, prefix)
    return m.eval()


def load_components(config_name: str, checkpoint_dir: Optional[str] = None,
                    device: Optional[torch.device] = None, dtype: Optional[torch.dtype] = None,
                    offload: Optional[bool] = None, adapters: Optional[List[str]] = None) -> Components:
    """adapters: one LoRA file per expert (wan/lora.py), merged into its weights here."""
    cfg = get_config(config_name)
    if device is None:
        device, auto_dtype = select_device()
        dtype = dtype or auto_dtype
    dtype = dtype or torch.float32
    # A tiny config reads a checkpoint when one is there (written by tests/tiny_checkpoint.py, e.g.
    # on a network volume); else it makes its random weights, and says so.
    from_checkpoint = not cfg.tiny or bool(checkpoint_dir and os.path.isdir(checkpoint_dir))
    adapters = list(adapters or [])
    key = (cfg.name, checkpoint_dir if from_checkpoint else None, str(device), str(dtype), tuple(adapters))
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
        t0 = time.perf_counter()
        if from_checkpoint:
            comps = _real(cfg, checkpoint_dir, device, dtype, offload)
        else:
            comps = _tiny(cfg, device, dtype)
        if adapters:
            _merge(comps, adapters)
        comps.load_s = round(time.perf_counter() - t0, 3)
        _CACHE.clear()  # one model set per worker: the previous one would just hold memory
        _CACHE[key] = comps
        return comps


def _merge(comps: Components, adapters: List[str]) -> None:
    if len(adapters) != len(comps.experts):
        raise ValueError(f"{len(adapters)} adapter files for {len(comps.experts)} experts")
    work = torch.device("cuda") if torch.cuda.is_available() else None
    for expert, path in zip(comps.experts, adapters):
        merge_adapter(expert, path, work)
    comps.adapters = adapters


def _tiny_limits(cfg: ModelConfig) -> str:
    return (f"output area reduced to {cfg.tiny_area} pixels (aspect kept) and at most "
            f"{cfg.tiny_max_frames} frames")


def _tiny(cfg, device, dtype):
    experts = [_build(WanTransformer, cfg.transformer, device, dtype, seed=TINY_SEED + i)
               for i in range(2 if cfg.two_experts else 1)]
    return Components(
        cfg=cfg, device=device, dtype=dtype, experts=experts,
        vae=_build(vae_class(cfg), cfg.vae, device, torch.float32, seed=TINY_SEED + 10),
        t5=_build(T5Encoder, cfg.t5, device, dtype, seed=TINY_SEED + 20),
        tokenizer=ByteTokenizer(cfg.t5.max_len),
        clip=(_build(ClipVision, cfg.clip, device, clip_dtype(device, dtype), seed=TINY_SEED + 30)
              if cfg.clip else None),
        warnings=[f"WAN_CONFIG={cfg.name}: tiny test model with random weights (seed {TINY_SEED}) and "
                  f"a byte-level tokenizer; the video is noise, not a generation",
                  f"tiny mode: {_tiny_limits(cfg)}"])


def _real(cfg, root, device, dtype, offload):
    check_checkpoint(cfg, root)
    if offload is None:
        offload = _offload_wanted(cfg, root, device)
    home = torch.device("cpu") if offload else device
    experts = [_build(WanTransformer, cfg.transformer, home, dtype,
                      path=os.path.join(root, d) if d else root) for d in cfg.expert_dirs]
    vae = _build(vae_class(cfg), cfg.vae, device, torch.float32,
                 path=os.path.join(root, cfg.vae_file))
    t5 = _build(T5Encoder, cfg.t5, home, dtype, path=os.path.join(root, cfg.t5_file))
    clip = None
    if cfg.clip is not None:
        clip = _build(ClipVision, cfg.clip, device, clip_dtype(device, dtype),
                      path=os.path.join(root, cfg.clip_file), prefix="visual.")
    tok = load_tokenizer(os.path.join(root, cfg.tokenizer_dir), cfg.t5.max_len)
    warnings = []
    if cfg.tiny:
        # A tiny T5 has the byte-level vocabulary (259 ids): the folder's tokenizer.json is read
        # (the layout is the published one) but the bytes are what the model was made for.
        tok = ByteTokenizer(cfg.t5.max_len)
        warnings.append(f"WAN_CONFIG={cfg.name}: tiny test model, weights from {root}; {_tiny_limits(cfg)}")
    comps = Components(cfg=cfg, device=device, dtype=dtype, experts=experts, vae=vae, t5=t5,
                       tokenizer=tok, clip=clip, offload=offload, warnings=warnings)
    if offload:
        comps.host_copies = {id(m): HostCopies(m) for m in experts + [t5]}
    return comps


def _weight_bytes(cfg: ModelConfig, root: str) -> int:
    """The experts' and T5's bytes on the card, from their files (all bf16 as published)."""
    files = [os.path.join(root, cfg.t5_file)]
    for d in cfg.expert_dirs:
        folder = os.path.join(root, d) if d else root
        files += [os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".safetensors")]
    return sum(os.path.getsize(f) for f in files)


def _offload_wanted(cfg: ModelConfig, root: str, device: torch.device) -> bool:
    """WAN_OFFLOAD=1 / 0 decide; by default the card's memory does (wan/residency.py)."""
    if device.type != "cuda":
        return False
    forced = os.environ.get("WAN_OFFLOAD", "auto")
    if forced in ("0", "1"):
        return forced == "1"
    need, card = _weight_bytes(cfg, root), torch.cuda.get_device_properties(device).total_memory
    offload = plan_residency(need, card)
    print(f"[wan] {cfg.name}: weights {need / 2**30:.1f} GiB, card {card / 2**30:.1f} GiB: "
          + ("idle experts and T5 wait in pinned host memory" if offload else "every part stays on the card"), flush=True)
    return offload
