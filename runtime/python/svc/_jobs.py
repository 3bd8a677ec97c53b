"""Running one queue job: call the function, stream chunks, enforce the deadline, report.

Execution timeout: the worker enforces the job's `executionTimeoutMs` itself. When it runs out
the job is reported FAILED with `error_type: "ExecutionTimeoutError"` (not the builtin
TimeoutError's name, so the platform can tell it from one the app raised). An async task is
cancelled; a sync function cannot be interrupted, so its thread runs on and its result is
dropped. The platform keeps its own, later deadline only for workers that die or hang.
"""
import inspect
import json
import queue
import threading
import time
import traceback
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from ._call import kwargs_for
from ._log import logger
from ._loop import LoopThread
from ._platform import WorkerClient
from .errors import is_input_error

TIMEOUT_ERROR_TYPE = "ExecutionTimeoutError"


@dataclass
class Job:
    id: str
    input: Any
    timeout_s: Optional[float]
    wake: threading.Event = field(default_factory=threading.Event)  # set when done or cancelled
    cancelled: bool = False
    abandoned: bool = False  # cancelled or timed out: nothing more is sent for it

    def cancel(self) -> None:
        self.cancelled = True
        self.wake.set()


class OutputNotJSONError(TypeError):
    """The function returned something JSON cannot carry (docs/platform.md, "Limits")."""


def _not_json_reason(exc: BaseException) -> str:
    if isinstance(exc, ValueError) and "Out of range float" in str(exc):
        why = "NaN and Infinity are not JSON numbers"
    elif isinstance(exc, RecursionError):
        why = "it is nested too deeply"
    else:
        why = str(exc)
    return f"the function's output is not JSON: {why}; return JSON values only (e.g. null or a string instead of NaN)"


class _Abandoned(Exception):
    """Raised inside a generator's driver to stop it once the job is abandoned."""


def error_body(exc: BaseException) -> Dict[str, Any]:
    kind = "InputValidationError" if is_input_error(exc) else type(exc).__name__
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {"error": {"error_type": kind, "error_message": str(exc), "error_traceback": trace}}


_IDLE_THREAD_S = 60.0  # an idle runner thread exits after this long
_tasks: "queue.SimpleQueue[Callable[[], None]]" = queue.SimpleQueue()
_idle_threads = 0
_idle_lock = threading.Lock()


def _runner_thread(first: Callable[[], None]) -> None:
    global _idle_threads
    task: Optional[Callable[[], None]] = first
    while True:
        if task is not None:
            task()
            with _idle_lock:
                _idle_threads += 1
        try:
            task = _tasks.get(timeout=_IDLE_THREAD_S)
        except queue.Empty:
            with _idle_lock:
                if _tasks.empty():  # else a task was queued for this thread meanwhile: take it
                    _idle_threads -= 1
                    return
            task = None


def in_daemon_thread(work: Callable[[], Any], name: str) -> "Future[Any]":
    """Run work (sync user code, or a queue job's run-and-report) on a daemon thread: an idle
    one from an earlier job, else a new one.

    Not a ThreadPoolExecutor: its threads are joined at interpreter exit, so one sync job
    abandoned after a cancel or timeout could keep a stopping worker from exiting. Reusing a
    thread saves a thread start per job; an abandoned job keeps its thread, the next job gets another.
    """
    global _idle_threads
    future: "Future[Any]" = Future()

    def target() -> None:
        if not future.set_running_or_notify_cancel():
            return
        threading.current_thread().name = name
        try:
            future.set_result(work())
        except BaseException as exc:  # noqa: B902 - handed to the waiting job thread
            future.set_exception(exc)

    with _idle_lock:
        if _idle_threads > 0:
            _idle_threads -= 1
            _tasks.put(target)
            return future
    threading.Thread(target=_runner_thread, args=(target,), name=name, daemon=True).start()
    return future


class JobRunner:
    def __init__(self, fn: Callable, client: WorkerClient, loop: LoopThread) -> None:
        self.fn = fn
        self.client = client
        self.loop = loop
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)
        self.is_stream = inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn)
        self.last_elapsed = 1.0  # seconds the last job ran

    def _emit(self, job: Job, chunk: Any) -> None:
        if job.abandoned or not self.client.stream(job.id, chunk):
            job.abandoned = True
            raise _Abandoned()

    def _sync_body(self, job: Job, kwargs: Dict[str, Any]) -> Any:
        if not self.is_stream:
            return self.fn(**kwargs)
        chunks: List[Any] = []
        gen = self.fn(**kwargs)
        try:
            for chunk in gen:
                self._emit(job, chunk)
                chunks.append(chunk)
        finally:
            gen.close()
        return chunks

    async def _async_body(self, job: Job, kwargs: Dict[str, Any]) -> Any:
        if not self.is_stream:
            return await self.fn(**kwargs)
        chunks: List[Any] = []
        agen = self.fn(**kwargs)
        try:
            async for chunk in agen:
                # The HTTP post blocks, so it runs off the loop that other jobs share.
                await self.loop.loop.run_in_executor(None, self._emit, job, chunk)
                chunks.append(chunk)
        finally:
            await agen.aclose()
        return chunks

    def run(self, job: Job) -> bool:
        """Run and report `job`; True when its output asked for a fresh worker (`refresh_worker`)."""
        started = time.monotonic()
        # One log line per job, written when it ends (id, outcome, duration); "started" only at DEBUG.
        logger.debug("job %s: started", job.id)
        try:
            kwargs = kwargs_for(self.fn, job.input)
        except Exception as exc:
            logger.info("job %s: rejected input after %.2f s: %s", job.id, time.monotonic() - started, exc)
            self.client.done(job.id, error_body(exc))
            return False
        if self.is_async:
            future = self.loop.submit(self._async_body(job, kwargs))
        else:
            future = in_daemon_thread(lambda: self._sync_body(job, kwargs), f"svc-run-{job.id}")
        future.add_done_callback(lambda _: job.wake.set())

        # Results held for a batch go out if this job is not done at once (runtime/_done_batch).
        wait = getattr(self.client, "wait", None)
        finished = wait(job.wake, job.timeout_s) if wait else job.wake.wait(job.timeout_s)
        if job.cancelled:
            job.abandoned = True
            future.cancel()
            logger.info("job %s: cancelled by the platform after %.2f s; not reported", job.id, time.monotonic() - started)
            return False
        if not finished:
            job.abandoned = True
            future.cancel()
            logger.warning("job %s: execution timeout of %.1f s reached", job.id, job.timeout_s)
            self.client.done(job.id, {"error": {
                "error_type": TIMEOUT_ERROR_TYPE,
                "error_message": f"job exceeded its execution timeout of {job.timeout_s:g} s",
                "error_traceback": ""}})
            return False
        return self._report(job, future, time.monotonic() - started)

    def _report(self, job: Job, future: "Future[Any]", elapsed: float) -> bool:
        self.last_elapsed = elapsed  # the queue worker takes several jobs at once after fast ones
        try:
            output = future.result()
        except BaseException as exc:  # noqa: B902 - user code may raise anything, SystemExit included
            if isinstance(exc, _Abandoned) or job.abandoned:
                logger.info("job %s: stopped after %.2f s; the platform no longer holds it", job.id, elapsed)
                return False
            logger.error("job %s: failed after %.2f s: %s: %s", job.id, elapsed, type(exc).__name__, exc)
            self.client.done(job.id, error_body(exc))
            return False

        refresh = False
        if isinstance(output, dict):
            if output.get("error"):
                message = output["error"]
                message = message if isinstance(message, str) else json.dumps(message, default=str)
                logger.info("job %s: returned an error after %.2f s: %s", job.id, elapsed, message)
                self.client.done(job.id, {"error": message})
                return False
            if "refresh_worker" in output:
                output = dict(output)
                refresh = bool(output.pop("refresh_worker"))
        try:
            self.client.done(job.id, {"output": output}, stream=self.is_stream, take_next=not refresh)
        except (TypeError, ValueError, RecursionError) as exc:  # not JSON: the job fails with why
            logger.error("job %s: output is not JSON after %.2f s: %s", job.id, elapsed, exc)
            self.client.done(job.id, error_body(OutputNotJSONError(_not_json_reason(exc))))
            return refresh
        logger.info("job %s: completed in %.2f s", job.id, elapsed)
        return refresh
