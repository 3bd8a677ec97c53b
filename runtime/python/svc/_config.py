"""Validation of `Endpoint(...)` arguments at decoration time.

The build checks the same rules statically (core/manifest.ts); checking again here gives the
same message when the code is run directly, e.g. in unit tests.
"""
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .gpu import GpuGroup

DEFAULT_CPU = "cpu3c-2-4"
SCALER_TYPES = ("QUEUE_DELAY", "REQUEST_COUNT")
MAX_GPU_TYPES = 3
MAX_EXECUTION_TIMEOUT_S = 7 * 24 * 3600  # the platform's documented maximum
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$", re.IGNORECASE)  # same rule as core/manifest.ts


@dataclass(frozen=True)
class EndpointConfig:
    name: str
    gpu_ids: Optional[List[str]]
    cpu_ids: Optional[List[str]]
    gpu_count: int
    workers_min: int
    workers_max: int
    idle_timeout: float
    scaler_type: str
    scaler_value: float
    execution_timeout: float
    env: Dict[str, str] = field(default_factory=dict)
    dependencies: List[str] = field(default_factory=list)
    flashboot: bool = True


def _fail(name: Any, message: str) -> None:
    raise ValueError(f"Endpoint(name={name!r}): {message}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _gpu_ids(name: str, gpu: Any) -> List[str]:
    items = list(gpu) if isinstance(gpu, (list, tuple)) else [gpu]
    if not 1 <= len(items) <= MAX_GPU_TYPES:
        _fail(name, f"gpu takes 1 to {MAX_GPU_TYPES} GPU types, got {len(items)}")
    valid = [g.value for g in GpuGroup]
    ids = []
    for item in items:
        value = item.value if isinstance(item, GpuGroup) else item
        if value not in valid:
            _fail(name, f"unknown gpu {item!r}; use a GpuGroup member: {', '.join(valid)}")
        ids.append(value)
    if len(set(ids)) != len(ids):
        _fail(name, f"gpu lists a type twice: {ids}")
    return ids


def _cpu_ids(name: str, cpu: Any) -> List[str]:
    items = list(cpu) if isinstance(cpu, (list, tuple)) else [cpu]
    if not items or not all(isinstance(c, str) and c.strip() for c in items):
        _fail(name, f"cpu must be a CPU flavour string such as {DEFAULT_CPU!r} or a list of them, got {cpu!r}")
    return items


def _workers(name: str, workers: Any) -> Tuple[int, int]:
    if _is_int(workers):
        low, high = 0, workers
    elif isinstance(workers, (list, tuple)) and len(workers) == 2 and all(_is_int(w) for w in workers):
        low, high = workers
    else:
        _fail(name, f"workers must be (min, max) or an int max, got {workers!r}")
    if low < 0 or high < low:
        _fail(name, f"workers needs 0 <= min <= max, got ({low}, {high})")
    return low, high


def build_config(name: Any, gpu: Any = None, cpu: Any = None, gpu_count: Any = 1, workers: Any = (0, 3),
                 idle_timeout: Any = 5, scaler_type: Any = "QUEUE_DELAY", scaler_value: Any = 4,
                 execution_timeout: Any = 600, env: Any = None, dependencies: Any = None,
                 flashboot: Any = True) -> EndpointConfig:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        _fail(name, "name must be a non-empty string of letters, digits, '-' and '_' starting with a letter or digit")
    if gpu is not None and cpu is not None:
        _fail(name, "give gpu or cpu, not both")
    gpu_ids = _gpu_ids(name, gpu) if gpu is not None else None
    cpu_ids = _cpu_ids(name, cpu) if cpu is not None else (None if gpu_ids else [DEFAULT_CPU])
    if not _is_int(gpu_count) or gpu_count < 1:
        _fail(name, f"gpu_count must be an int >= 1, got {gpu_count!r}")
    workers_min, workers_max = _workers(name, workers)
    if not _is_number(idle_timeout) or idle_timeout < 0:
        _fail(name, f"idle_timeout must be a number of seconds >= 0, got {idle_timeout!r}")
    if scaler_type not in SCALER_TYPES:
        _fail(name, f"scaler_type must be one of {', '.join(SCALER_TYPES)}, got {scaler_type!r}")
    if not _is_number(scaler_value) or scaler_value < 0:
        _fail(name, f"scaler_value must be a number >= 0, got {scaler_value!r}")
    if not _is_number(execution_timeout) or not 0 < execution_timeout <= MAX_EXECUTION_TIMEOUT_S:
        _fail(name, f"execution_timeout must be seconds in (0, {MAX_EXECUTION_TIMEOUT_S}], got {execution_timeout!r}")
    env = {} if env is None else env
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        _fail(name, "env must be a dict of str to str")
    dependencies = [] if dependencies is None else dependencies
    if not isinstance(dependencies, (list, tuple)) or not all(isinstance(d, str) and d.strip() for d in dependencies):
        _fail(name, "dependencies must be a list of requirement strings")
    if not isinstance(flashboot, bool):
        _fail(name, f"flashboot must be True or False, got {flashboot!r}")
    return EndpointConfig(name=name, gpu_ids=gpu_ids, cpu_ids=cpu_ids, gpu_count=gpu_count,
                          workers_min=workers_min, workers_max=workers_max, idle_timeout=idle_timeout,
                          scaler_type=scaler_type, scaler_value=scaler_value,
                          execution_timeout=execution_timeout, env=dict(env),
                          dependencies=list(dependencies), flashboot=flashboot)
