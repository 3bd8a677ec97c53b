"""Which sampling a job runs (README.md, "Sampling modes"), decided from the deployment's env and
the request, apart from running it:

- distilled: WAN_LORA names step-distillation adapters, merged into the experts at load; the
  distillation authors' Euler schedule; the request's `guidance` decides guidance as their pipeline
  does (1 → one unguided forward per step), its `num_inference_steps` the step count (default 4).
- cached: the experts as published with MagCache (wan/stepcache.py), when WAN_STEP_CACHE=1 or the
  request's `enable_step_cache` is true and the model has a calibration table.
- standard: the experts as published, every forward computed (WAN_SOLVER: unipc or euler)."""
import os
from dataclasses import dataclass, field
from typing import List, Optional

from .config import ModelConfig
from .lora import adapter_files
from .stepcache import TABLES, MagCache, MagCacheParams, high_noise_steps


@dataclass
class Mode:
    name: str                       # distilled | cached | standard
    solver: str
    cache: Optional[MagCacheParams] = None
    warnings: List[str] = field(default_factory=list)

    def step_cache(self, cfg: ModelConfig, steps: int, shift: float) -> Optional[MagCache]:
        """A fresh cache for one job (its state is the job's)."""
        if self.cache is None:
            return None
        split = high_noise_steps(steps, shift, cfg.boundary) if cfg.two_experts else 0
        return MagCache(TABLES[cfg.name], steps, split, self.cache)


def deployment_adapters(cfg: ModelConfig) -> List[str]:
    """The adapter files WAN_LORA names, one per expert ([] when unset)."""
    spec = os.environ.get("WAN_LORA", "").strip()
    return adapter_files(spec, cfg.expert_dirs) if spec else []


def _env_flag(name: str) -> bool:
    value = os.environ.get(name, "0").strip().lower()
    if value not in ("0", "1", "true", "false", ""):
        raise ValueError(f"{name} must be 1 or 0, got {value!r}")
    return value in ("1", "true")


def choose(cfg: ModelConfig, distilled: bool, request_cache: Optional[bool],
           solver: Optional[str] = None) -> Mode:
    wanted = _env_flag("WAN_STEP_CACHE") if request_cache is None else request_cache
    if distilled:
        mode = Mode("distilled", "distilled-euler")
        if request_cache:
            mode.warnings.append("enable_step_cache: the distilled mode computes every one of its few steps "
                                 "(MagCache is calibrated for the 40-step experts); it ran uncached")
        return mode
    solver = solver or os.environ.get("WAN_SOLVER", "unipc")
    if not wanted:
        return Mode("standard", solver)
    if cfg.name not in TABLES:
        return Mode("standard", solver, warnings=[
            f"enable_step_cache: no MagCache calibration for {cfg.name} (there is one for "
            f"{', '.join(sorted(TABLES))}); every step was computed"])
    params = os.environ.get("WAN_MAGCACHE", "").strip()
    return Mode("cached", solver, MagCacheParams.parse(params) if params else MagCacheParams())
