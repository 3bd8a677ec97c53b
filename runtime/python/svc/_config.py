"""Validation of `Endpoint(...)` arguments at decoration time.

The rules, bounds and messages come from `_schema.py`, generated from the one Endpoint schema
(core/endpoint-schema.ts) that the build and the platform check too: code run directly (unit tests,
a worker) refuses exactly what `svc build` refuses, with the same message.
"""
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from . import _schema as schema
from ._schema import GpuGroup
from ._cron import cron_problem
from .options import Batch, Cron, Retries

DEFAULT_CPU = schema.DEFAULT_CPU
_NAME_RE = re.compile(schema.NAME_PATTERN)
_CPU_RE = re.compile(schema.CPU_FLAVOUR_PATTERN)
_ENV_NAME_RE = re.compile(schema.ENV_NAME_PATTERN)


@dataclass(frozen=True)
class EndpointConfig:
    name: str
    gpu_ids: Optional[List[str]]
    cpu_ids: Optional[List[str]]
    gpu_count: int
    workers_min: int
    workers_max: int
    idle_timeout: int
    scaler_type: Optional[str]  # None: by kind, QUEUE_DELAY (queue-based) or REQUEST_COUNT (load-balanced)
    scaler_value: int
    execution_timeout: float
    env: Dict[str, str] = field(default_factory=dict)
    dependencies: List[str] = field(default_factory=list)
    flashboot: bool = True
    volume: Optional[str] = None  # a network volume's name, mounted at /platform-volume
    schedule: Optional[Cron] = None  # when the platform runs the function
    batch: Optional[Batch] = None  # the function takes a list of inputs
    retries: Optional[Retries] = None  # None: a job whose function raised fails at once
    network: bool = True  # False: the workers get no egress, only their channel to the platform
    concurrency: Optional[int] = None  # jobs one worker runs at once (None: 1, or the module's concurrency_modifier)


def _fail(name: Any, rule: str, got: Any = None, why: str = "") -> None:
    raise ValueError(f"Endpoint(name={name!r}): " + schema.MESSAGES[rule].replace("{got}", repr(got)).replace("{why}", why))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _within(value: Any, bounds: Dict[str, int]) -> bool:
    return bounds["min"] <= value <= bounds["max"]


def _gpu_ids(name: str, gpu: Any, gpu_count: Any) -> Tuple[List[str], int]:
    items = list(gpu) if isinstance(gpu, (list, tuple)) else [gpu]
    if not _within(len(items), schema.GPU_TYPES):
        _fail(name, "gpuTypes", len(items))
    ids = []
    for item in items:
        value = item.value if isinstance(item, GpuGroup) else item
        if value not in schema.GPU_GROUPS:
            _fail(name, "gpu", item)
        ids.append(value)
    if len(set(ids)) != len(ids):
        _fail(name, "gpuTwice")
    count = schema.DEFAULT_GPU_COUNT if gpu_count is None else gpu_count
    if not _is_int(count) or not _within(count, schema.GPU_COUNT):
        _fail(name, "gpuCount", count)
    return ids, count


def _cpu_ids(name: str, cpu: Any) -> List[str]:
    items = list(cpu) if isinstance(cpu, (list, tuple)) else [cpu]
    if not _within(len(items), schema.CPU_FLAVOURS):
        _fail(name, "cpuFlavours", cpu)
    for item in items:
        if not isinstance(item, str) or not _CPU_RE.match(item):
            _fail(name, "cpu", item)
    return items


def _workers(name: str, workers: Any) -> Tuple[int, int]:
    if _is_int(workers):
        low, high = 0, workers
    elif isinstance(workers, (list, tuple)) and len(workers) == 2 and all(_is_int(w) for w in workers):
        low, high = workers
    else:
        _fail(name, "workers", workers)
    if low < schema.WORKERS["min"] or high < low or high > schema.WORKERS["max"]:
        _fail(name, "workersRange", (low, high))
    return low, high


def _env(name: str, env: Any) -> Dict[str, str]:
    if not isinstance(env, dict) or len(env) > schema.ENV_VARS["max"]:
        _fail(name, "env", env)
    for key, value in env.items():
        if not isinstance(key, str) or not _ENV_NAME_RE.match(key) or len(key) > schema.ENV_VARS["nameLength"]:
            _fail(name, "envName", key)
        if not isinstance(value, str) or len(value) > schema.ENV_VARS["valueLength"]:
            _fail(name, "envValue", key)
    return dict(env)


def _known_zone(name: Any) -> bool:
    """Whether the time zone database knows `name`; True where there is no database to ask (a
    worker's image without tzdata: the build checked the name). Imported here: only schedules ask."""
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(name)
        return True
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError):
        try:
            zoneinfo.ZoneInfo("UTC")
        except zoneinfo.ZoneInfoNotFoundError:
            return isinstance(name, str)
        return False


def _schedule(name: str, schedule: Any) -> Cron:
    """The schedule's grammar (._cron), time zone and input."""
    cron = Cron(schedule) if isinstance(schedule, str) else schedule
    if not isinstance(cron, Cron) or not isinstance(cron.cron, str):
        _fail(name, "schedule", schedule)
    problem = cron_problem(cron.cron)
    if problem:
        _fail(name, "scheduleCron", cron.cron, problem)
    if not _known_zone(cron.timezone):
        _fail(name, "scheduleTimeZone", cron.timezone)
    if cron.input is not None and not isinstance(cron.input, dict):
        _fail(name, "scheduleInput", cron.input)
    return cron


def _batch(name: str, batch: Any) -> Batch:
    if not isinstance(batch, Batch):
        _fail(name, "batch", batch)
    if not _is_int(batch.max_size) or not _within(batch.max_size, schema.BATCH_SIZE):
        _fail(name, "batchSize", batch.max_size)
    if not _is_number(batch.max_wait_ms) or not _within(batch.max_wait_ms, schema.BATCH_WAIT_MS):
        _fail(name, "batchWait", batch.max_wait_ms)
    return batch


def build_config(name: Any, gpu: Any = None, cpu: Any = None, gpu_count: Any = None,
                 workers: Any = schema.DEFAULT_WORKERS, idle_timeout: Any = schema.DEFAULT_IDLE_TIMEOUT_S,
                 scaler_type: Any = None, scaler_value: Any = schema.DEFAULT_SCALER_VALUE,
                 execution_timeout: Any = schema.DEFAULT_EXECUTION_TIMEOUT_S, env: Any = None,
                 dependencies: Any = None, flashboot: Any = schema.DEFAULT_FLASHBOOT,
                 volume: Any = None, schedule: Any = None, batch: Any = None,
                 retries: Any = None, network: Any = schema.DEFAULT_NETWORK, concurrency: Any = None) -> EndpointConfig:
    if name is None:
        _fail(name, "nameMissing")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        _fail(name, "name", name)
    if gpu is not None and cpu is not None:
        _fail(name, "gpuAndCpu")
    gpu_ids, cpu_ids = None, None
    if gpu is not None:
        gpu_ids, gpu_count = _gpu_ids(name, gpu, gpu_count)
    else:
        if gpu_count is not None:
            _fail(name, "gpuCountWithoutGpu")
        gpu_count = schema.DEFAULT_GPU_COUNT
        cpu_ids = _cpu_ids(name, DEFAULT_CPU if cpu is None else cpu)
    workers_min, workers_max = _workers(name, workers)
    if not _is_int(idle_timeout) or not _within(idle_timeout, schema.IDLE_TIMEOUT_S):
        _fail(name, "idleTimeout", idle_timeout)
    if scaler_type is not None and scaler_type not in schema.SCALER_TYPES:
        _fail(name, "scalerType", scaler_type)
    if not _is_int(scaler_value) or not _within(scaler_value, schema.SCALER_VALUE):
        _fail(name, "scalerValue", scaler_value)
    if not _is_number(execution_timeout) or not _within(execution_timeout, schema.EXECUTION_TIMEOUT_S):
        _fail(name, "executionTimeout", execution_timeout)
    dependencies = [] if dependencies is None else dependencies
    if not isinstance(dependencies, (list, tuple)) or not all(isinstance(d, str) and d.strip() for d in dependencies):
        _fail(name, "dependencies", dependencies)
    if not isinstance(flashboot, bool):
        _fail(name, "flashboot", flashboot)
    if volume is not None and (not isinstance(volume, str) or not re.fullmatch(schema.VOLUME_NAME_PATTERN, volume)):
        _fail(name, "volume", volume)
    retries = _retries(name, retries)
    if not isinstance(network, bool):
        _fail(name, "network", network)
    if concurrency is not None:
        if batch is not None:
            _fail(name, "concurrencyWithBatch")
        if not _is_int(concurrency) or not _within(concurrency, schema.CONCURRENCY):
            _fail(name, "concurrency", concurrency)
    return EndpointConfig(name=name, gpu_ids=gpu_ids, cpu_ids=cpu_ids, gpu_count=gpu_count,
                          workers_min=workers_min, workers_max=workers_max, idle_timeout=idle_timeout,
                          scaler_type=scaler_type, scaler_value=scaler_value,
                          execution_timeout=execution_timeout, env=_env(name, {} if env is None else env),
                          dependencies=[d.strip() for d in dependencies], flashboot=flashboot,
                          volume=volume,
                          schedule=None if schedule is None else _schedule(name, schedule),
                          batch=None if batch is None else _batch(name, batch), retries=retries,
                          network=network, concurrency=concurrency)


def _retries(name: Any, retries: Any) -> Optional[Retries]:
    given = Retries(max_retries=retries) if _is_int(retries) else retries
    if given is None:
        return None
    if not isinstance(given, Retries) or not _is_int(given.max_retries) or not _within(given.max_retries, schema.MAX_RETRIES) \
            or not _is_number(given.backoff) or not _within(given.backoff, schema.RETRY_BACKOFF) \
            or not _is_number(given.initial_delay) or not _within(given.initial_delay, schema.RETRY_INITIAL_DELAY_S):
        _fail(name, "retries", retries)
    return given if given.max_retries > 0 else None
