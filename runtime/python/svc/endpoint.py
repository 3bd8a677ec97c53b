"""The `Endpoint` decorator: queue-based functions and load-balanced routes."""
import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from . import fanout, remote
from ._config import EndpointConfig, build_config
from . import _schema as schema
from ._schema import HTTP_METHODS, RESERVED_PATHS
from .options import Batch, Cron, Retries

# Endpoints created in this process, by name; the worker finds its functions here after import.
registry: Dict[str, "Endpoint"] = {}


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    function: Callable  # the user's function, unwrapped


def _wrap(fn: Callable, endpoint_name: str) -> Callable:
    """A wrapper of the same kind as `fn` (plain, coroutine, generator, async generator).

    Inside a worker of another endpoint it calls the function remotely; otherwise it is `fn`.
    Remote HTTP from an async wrapper runs in a thread so it never blocks the event loop (asyncio
    is imported there, where a loop already runs: a worker of sync functions never imports it).
    """
    name = fn.__name__
    if inspect.isasyncgenfunction(fn):
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            if remote.is_remote(name, endpoint_name):
                import asyncio

                for chunk in await asyncio.get_running_loop().run_in_executor(
                        None, remote.call, fn, endpoint_name, args, kwargs) or []:
                    yield chunk
                return
            async for chunk in fn(*args, **kwargs):
                yield chunk
    elif inspect.iscoroutinefunction(fn):
        async def wrapper(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            if remote.is_remote(name, endpoint_name):
                import asyncio

                return await asyncio.get_running_loop().run_in_executor(
                    None, remote.call, fn, endpoint_name, args, kwargs)
            return await fn(*args, **kwargs)
    elif inspect.isgeneratorfunction(fn):
        def wrapper(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            if remote.is_remote(name, endpoint_name):
                yield from remote.call(fn, endpoint_name, args, kwargs) or []
                return
            yield from fn(*args, **kwargs)
    else:
        def wrapper(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            if remote.is_remote(name, endpoint_name):
                return remote.call(fn, endpoint_name, args, kwargs)
            return fn(*args, **kwargs)
    functools.update_wrapper(wrapper, fn)  # __name__, __doc__, __wrapped__, ...
    wrapper.endpoint_name = endpoint_name  # type: ignore[attr-defined]
    fanout.attach(wrapper, fn, endpoint_name)  # .remote, .spawn, .map, .local
    return wrapper


class Endpoint:
    """Declare a serverless endpoint.

    Queue-based: `@Endpoint(name="gpu-worker", gpu=GpuGroup.ADA_24)` on one function.
    Load-balanced: `api = Endpoint(name="api")`, then `@api.post("/generate")` on each route.
    The arguments' rules are those of core/endpoint-schema.ts (see `_config.py`); `gpu_count=None`
    means 1 with a GPU, and `scaler_type=None` means QUEUE_DELAY (queue-based) or REQUEST_COUNT
    (load-balanced). A queue-based endpoint may also take `schedule="0 3 * * *"` (or `Cron(...)`: the
    platform runs it on that schedule) and `batch=Batch(max_size, max_wait_ms)` (the function takes
    each parameter as a list, one value per job, and returns one result per job), and
    `concurrency=N` (each worker runs up to N jobs at once; default 1).
    """

    def __init__(self, name: str, gpu: Any = None, cpu: Any = None, gpu_count: Optional[int] = None,
                 workers: Union[int, Tuple[int, int]] = schema.DEFAULT_WORKERS,
                 idle_timeout: int = schema.DEFAULT_IDLE_TIMEOUT_S, scaler_type: Optional[str] = None,
                 scaler_value: int = schema.DEFAULT_SCALER_VALUE,
                 execution_timeout: float = schema.DEFAULT_EXECUTION_TIMEOUT_S,
                 env: Optional[Dict[str, str]] = None, dependencies: Optional[List[str]] = None,
                 flashboot: bool = schema.DEFAULT_FLASHBOOT, volume: Optional[str] = None,
                 schedule: Union[str, Cron, None] = None, batch: Optional[Batch] = None,
                 retries: Union[int, Retries, None] = None, network: bool = schema.DEFAULT_NETWORK,
                 concurrency: Optional[int] = None) -> None:
        self.config: EndpointConfig = build_config(
            name, gpu=gpu, cpu=cpu, gpu_count=gpu_count, workers=workers, idle_timeout=idle_timeout,
            scaler_type=scaler_type, scaler_value=scaler_value, execution_timeout=execution_timeout,
            env=env, dependencies=dependencies, flashboot=flashboot, volume=volume,
            schedule=schedule, batch=batch, retries=retries, network=network, concurrency=concurrency)
        self.name = name
        self.function: Optional[Callable] = None  # set for queue-based endpoints
        self.routes: Dict[Tuple[str, str], Route] = {}  # set for load-balanced endpoints
        registry[name] = self

    @property
    def type(self) -> str:
        return "LB" if self.routes else "QB"

    def __repr__(self) -> str:
        return f"Endpoint(name={self.name!r}, type={self.type})"

    def __call__(self, fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError(f"Endpoint(name={self.name!r}) decorates a function, got {fn!r}")
        if self.routes:
            raise ValueError(f"Endpoint {self.name!r} has HTTP routes (load-balanced); it cannot also "
                             f"decorate {fn.__name__}() as a queue-based function")
        if self.function is not None:
            raise ValueError(f"Endpoint {self.name!r} already serves {self.function.__name__}(); a queue-based "
                             f"endpoint has one function, give {fn.__name__}() its own Endpoint")
        self.function = fn
        return _wrap(fn, self.name)

    def route(self, method: str, path: str) -> Callable[[Callable], Callable]:
        method = method.upper()
        if method not in HTTP_METHODS:
            raise ValueError(f"Endpoint {self.name!r}: unsupported HTTP method {method!r}")
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError(f"Endpoint {self.name!r}: route path must start with '/', got {path!r}")
        if path.rstrip("/") in RESERVED_PATHS:
            raise ValueError(f"Endpoint {self.name!r}: {path} is reserved by the worker "
                             f"({', '.join(RESERVED_PATHS)}); choose another path")

        def decorate(fn: Callable) -> Callable:
            for option in ("schedule", "batch", "concurrency"):
                if getattr(self.config, option) is not None:
                    raise ValueError(f"Endpoint(name={self.name!r}): " + schema.MESSAGES["queueBasedOnly"].replace("{got}", repr(option)))
            if self.function is not None:
                raise ValueError(f"Endpoint {self.name!r} is queue-based ({self.function.__name__}()); "
                                 f"it cannot also have HTTP routes")
            key = (method, path)
            if key in self.routes:
                raise ValueError(f"Endpoint {self.name!r}: {method} {path} is already handled by "
                                 f"{self.routes[key].function.__name__}()")
            self.routes[key] = Route(method, path, fn)
            wrapper = _wrap(fn, self.name)
            wrapper.http_method, wrapper.http_path = method, path  # type: ignore[attr-defined]
            return wrapper
        return decorate

    def get(self, path: str) -> Callable[[Callable], Callable]:
        return self.route("GET", path)

    def post(self, path: str) -> Callable[[Callable], Callable]:
        return self.route("POST", path)

    def put(self, path: str) -> Callable[[Callable], Callable]:
        return self.route("PUT", path)

    def delete(self, path: str) -> Callable[[Callable], Callable]:
        return self.route("DELETE", path)

    def patch(self, path: str) -> Callable[[Callable], Callable]:
        return self.route("PATCH", path)
