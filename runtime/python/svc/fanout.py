"""Function handles and fan-out: `.remote`, `.spawn`, `.map` and `.local` on every `@Endpoint` function.

`fn.remote(**kw)` runs the function on its endpoint and waits; `fn.spawn(**kw)` submits it (`/run`)
and answers a `JobHandle` (`.get(timeout)`, `.status()`, `.cancel()`); `fn.map(inputs,
concurrency=32, return_exceptions=False)` runs it once per input (a kwargs dict, or a single value
for the first parameter) and yields the results in input order; `fn.local(...)` calls the Python
function here. Inside a worker the endpoint is one of its app's own (remote.py's cross-endpoint
path); outside, the endpoints `svc deploy` made (remote.endpoint_url).

`.map` holds at most `concurrency` calls in flight, each on a kept-alive connection (10,000 inputs
are `concurrency` sockets, not 10,000; a QB endpoint's are read by the caller's own thread,
_map_lanes.py), reads the inputs lazily and keeps at most
`4 × concurrency` results that arrived ahead of their turn: memory stays flat however many inputs
come. A job a dying worker held is run again by the platform; the call waits for it (runsync, then
/status). docs/deploy.md, "Fan-out".
"""
import os
import sys
import time
from typing import Any, Callable, Dict, Iterable, Iterator, Optional

from . import _http, _manifest, _pacing, remote
from ._call import input_for
from ._map_lanes import FastLane, ThreadLane
from .errors import RemoteCallError

DEFAULT_CONCURRENCY = 32
AHEAD_PER_SLOT = 4  # results kept ahead of the one the caller waits for, per slot
PROGRESS_EVERY_S = 0.1
STATUS_WAIT_MS = 30_000  # one /status-sync long poll


class JobHandle:
    """A job submitted with `.spawn(...)`: ask its status, wait for its output, cancel it."""

    def __init__(self, function: str, endpoint: str, url: str, job_id: str) -> None:
        self.function, self.endpoint, self.url, self.id = function, endpoint, url, job_id

    def __repr__(self) -> str:
        return f"JobHandle({self.function} on {self.endpoint!r}, id={self.id!r})"

    def _ask(self, method: str, path: str, timeout: float) -> Dict[str, Any]:
        try:
            resp = _pacing.send(self.endpoint, lambda: _http.request(method, f"{self.url}{path}", token=remote.api_key(), timeout=timeout),
                                idempotent=method == "GET")
        except _http.TransportError as err:
            raise remote.failure(self.function, self.endpoint, str(err), "unreachable", self.id) from None
        if resp.status != 200 or not isinstance(resp.body, dict):
            raise remote.failure(self.function, self.endpoint, resp.text[:500], f"HTTP {resp.status}", self.id)
        return resp.body

    def status(self) -> Dict[str, Any]:
        """The job's /status body: `status` (IN_QUEUE, IN_PROGRESS, COMPLETED, FAILED, ...), `output` or `error`."""
        return self._ask("GET", f"/status/{self.id}", remote.REQUEST_TIMEOUT_S)

    def get(self, timeout: Optional[float] = None) -> Any:
        """Waits for the job (at most `timeout` seconds: TimeoutError) and answers its output; raises RemoteCallError if it did not complete."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left_ms = STATUS_WAIT_MS if deadline is None else int(max(0.0, deadline - time.monotonic()) * 1000)
            job = self._ask("GET", f"/status-sync/{self.id}?wait={min(left_ms, STATUS_WAIT_MS)}", STATUS_WAIT_MS / 1000 + 30)
            status = job.get("status")
            if status == "COMPLETED":
                return job.get("output")
            if status in remote.FINAL_STATUSES:
                raise remote.failure(self.function, self.endpoint, job.get("error") or status, status, self.id)
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"job {self.id} of {self.function} on {self.endpoint!r} is still {status} after {timeout} s")

    def cancel(self) -> Dict[str, Any]:
        """Cancels the job (a running one is stopped on its worker); answers `{id, status}`."""
        return self._ask("POST", f"/cancel/{self.id}", remote.REQUEST_TIMEOUT_S)


def _input_of(fn: Callable, item: Any) -> Dict[str, Any]:
    """A map item: a dict is the keyword arguments, anything else the first parameter's value."""
    return input_for(fn, (), item) if isinstance(item, dict) else input_for(fn, (item,), {})


def _item_error(index: int, payload: Any, error: BaseException) -> RemoteCallError:
    shown = repr(payload)
    shown = shown if len(shown) <= 200 else shown[:197] + "..."
    wrapped = RemoteCallError(f"item {index} ({shown}): {error}", endpoint=getattr(error, "endpoint", None),
                              function=getattr(error, "function", None), error=getattr(error, "error", str(error)),
                              status=getattr(error, "status", None), job_id=getattr(error, "job_id", None),
                              error_type=getattr(error, "error_type", None), traceback=getattr(error, "traceback", None))
    wrapped.index, wrapped.input = index, payload  # type: ignore[attr-defined]
    return wrapped


class _Progress:
    """`name.map: 120/10000 done, 1 failed, 850/s` on stderr, redrawn at most every 100 ms, only on a terminal."""

    def __init__(self, name: str, total: Optional[int]) -> None:
        self.name, self.total = name, total
        self.on = sys.stderr.isatty() and not os.environ.get("CI")
        self.started = self.drawn = time.monotonic()

    def draw(self, done: int, failed: int, force: bool = False) -> None:
        now = time.monotonic()
        if not self.on or (not force and now - self.drawn < PROGRESS_EVERY_S):
            return
        self.drawn = now
        rate = done / max(now - self.started, 1e-6)
        of = f"/{self.total}" if self.total is not None else ""
        sys.stderr.write(f"\r\x1b[K{self.name}.map: {done}{of} done, {failed} failed, {rate:.0f}/s")
        sys.stderr.flush()

    def clear(self) -> None:
        if self.on:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _lanes(call: Callable[[Dict[str, Any]], Any], concurrency: int, fast: Optional[Callable[[], Any]]) -> Any:
    """The fast lane when the calls are an endpoint's runsync over plain HTTP (remote.runsync_lane), else threads."""
    lane = None
    if fast is not None:
        try:
            lane = fast()
        except Exception:  # noqa: BLE001 - no URL and the like: every item's call says so itself
            lane = None
    return FastLane(lane, concurrency, call, remote.REQUEST_TIMEOUT_S) if lane is not None else ThreadLane(concurrency, call)


def map_calls(fn: Callable, call: Callable[[Dict[str, Any]], Any], inputs: Iterable[Any], concurrency: int,
              return_exceptions: bool, fast: Optional[Callable[[], Any]] = None) -> Iterator[Any]:
    """Runs `call` on each input's payload, at most `concurrency` at a time; yields in input order.

    `fast` makes the endpoint's runsync lane (_map_lanes.py) that sends the calls from this thread.
    """
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
    items = enumerate(inputs)
    total = len(inputs) if hasattr(inputs, "__len__") else None  # type: ignore[arg-type]
    window = concurrency * AHEAD_PER_SLOT
    results: Dict[int, Any] = {}  # index -> (ok, value): arrived, not yet yielded
    next_index = taken = done = failed = 0
    inputs_left = True
    lanes = _lanes(call, concurrency, fast)
    progress = _Progress(fn.__name__, total)
    try:
        while True:
            while inputs_left and lanes.in_flight < concurrency and taken - next_index < window:
                try:
                    index, item = next(items)
                except StopIteration:
                    inputs_left = False
                    break
                except BaseException as err:  # the caller's iterable raised: end the map with it
                    inputs_left = False
                    results[taken] = (False, err)
                    taken += 1
                    break
                taken += 1
                try:
                    payload = _input_of(fn, item)
                except Exception as err:  # noqa: BLE001 - the item's, named
                    results[index] = (False, _item_error(index, item, err))
                    continue
                lanes.submit(index, payload)
            if next_index in results:
                ok, value = results.pop(next_index)
                next_index += 1
                if ok or (return_exceptions and isinstance(value, Exception)):
                    yield value
                    continue
                raise value
            if not inputs_left and next_index >= taken:
                break  # every input taken and yielded
            for index, payload, (ok, value) in lanes.wait(PROGRESS_EVERY_S):
                results[index] = (True, value) if ok else (False, _item_error(index, payload, value))
                done += 1
                failed += 0 if ok else 1
            progress.draw(done, failed)
    finally:
        lanes.close()
        progress.draw(done, failed, force=True)
        progress.clear()


def attach(wrapper: Any, fn: Callable, endpoint_name: str) -> None:
    """Gives the decorated function its handles."""
    name = fn.__name__

    def target() -> Dict[str, str]:
        endpoint = _manifest.owner_of(name, endpoint_name)
        return {"endpoint": endpoint, "url": remote.endpoint_url(endpoint)}

    def run(payload: Dict[str, Any]) -> Any:
        return remote.call_payload(fn, endpoint_name, payload)

    def remote_call(*args: Any, **kwargs: Any) -> Any:
        """Runs the function on its endpoint and answers its output (RemoteCallError if it failed)."""
        return remote.call(fn, endpoint_name, args, kwargs)

    def spawn(*args: Any, **kwargs: Any) -> JobHandle:
        """Submits the function to its endpoint's queue (/run) and answers the job's handle."""
        where = target()
        payload = input_for(fn, args, kwargs)
        try:
            resp = _pacing.send(where["endpoint"], lambda: _http.request("POST", f"{where['url']}/run", {"input": payload}, token=remote.api_key(),
                                                                         timeout=remote.REQUEST_TIMEOUT_S))
        except _http.TransportError as err:
            raise remote.failure(name, where["endpoint"], str(err), "unreachable") from None
        body = resp.body if isinstance(resp.body, dict) else {}
        if resp.status != 200 or not body.get("id"):
            raise remote.failure(name, where["endpoint"], body.get("error") or resp.text[:500], f"HTTP {resp.status}")
        return JobHandle(name, where["endpoint"], where["url"], body["id"])

    def map_(inputs: Iterable[Any], concurrency: int = DEFAULT_CONCURRENCY, return_exceptions: bool = False) -> Iterator[Any]:
        """Runs the function once per input (a kwargs dict, or the first parameter's value), at most
        `concurrency` at a time; yields the outputs in input order. A failed item raises
        RemoteCallError naming the item (index and input), or is yielded as one with return_exceptions."""
        return map_calls(fn, run, inputs, concurrency, return_exceptions, fast=lambda: remote.runsync_lane(fn, endpoint_name))

    wrapper.remote = remote_call
    wrapper.spawn = spawn
    wrapper.map = map_
    wrapper.local = fn

