"""Running one queue job: call the function, stream chunks, enforce the deadline, report.

A sync function runs on the job's own thread (no hand-off: see _watchdog). An async one runs on
the event loop while the job's thread waits for it.

Execution timeout: the worker enforces the job's `executionTimeoutMs` itself (the watchdog keeps
the deadline). When it runs out the job is reported FAILED with `error_type:
"ExecutionTimeoutError"` (not the builtin TimeoutError's name, so the platform can tell it from
one the app raised). An async task is cancelled; a sync function cannot be interrupted, so it is
detached: its thread runs on and its result is dropped, while its slot and the jobs queued behind
it move on at once (`on_detach`). A cancel does the same without a report. The platform keeps its
own, later deadline only for workers that die or hang.
"""
import inspect
import json
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from ._call import kwargs_for
from ._log import logger
from ._loop import LoopThread
from ._platform import WorkerClient
from ._traceback import app_traceback
from ._watchdog import Watchdog
from ._trace import run_as
from .errors import is_input_error

TIMEOUT_ERROR_TYPE = "ExecutionTimeoutError"


@dataclass
class Job:
    id: str
    input: Any
    timeout_s: Optional[float]
    wake: threading.Event = field(default_factory=threading.Event)  # async: set when done, cancelled or timed out
    cancelled: bool = False
    timed_out: bool = False  # async: the watchdog's deadline came first
    abandoned: bool = False  # cancelled or timed out: nothing more is sent for it
    inline: bool = False  # its sync function runs on the job's thread right now
    detached: bool = False  # ...and another thread gave up on it (cancel, timeout): its result is dropped
    ended: bool = False  # its outcome is known (returned, raised, timed out): only its result is left to send
    lane: Any = None  # the queue worker's run of jobs this one belongs to
    traceparent: Optional[str] = None  # the platform's trace context for this job, carried into its calls
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def cancel(self) -> bool:
        """Marks it cancelled; True when its inline function was detached (the caller frees its slot)."""
        self.cancelled = True
        self.wake.set()
        return self.detach()

    def start_inline(self) -> bool:
        """Its sync function starts on the job's thread now; False when a cancel came first."""
        with self._lock:
            self.inline = not self.cancelled
            return self.inline

    def detach(self) -> bool:
        """Gives up on a running inline function; False when it finished first or is not inline."""
        with self._lock:
            if not self.inline or self.detached:
                return False
            self.detached = self.abandoned = True
            return True

    def finish_inline(self) -> bool:
        """The inline function returned; False when it had been detached meanwhile."""
        with self._lock:
            self.inline = False
            return not self.detached


def _nothing(*_: Any) -> None:
    pass


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
    trace = app_traceback(exc)
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
    def __init__(self, fn: Callable, client: WorkerClient, loop: LoopThread, watchdog: Watchdog) -> None:
        self.fn = fn
        self.client = client
        self.loop = loop
        self.watchdog = watchdog
        # Set by the queue worker: frees a detached job's slot and moves the jobs queued behind it.
        self.on_detach: Callable[[Job], None] = _nothing
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
            job.ended = True
            self.client.done(job.id, error_body(exc))
            return False
        held = self.client.holding()  # results of this thread's earlier jobs, waiting on this one
        on_hold = (lambda: self.client.flush(held)) if held is not None else _nothing
        if self.is_async:
            return self._run_async(job, kwargs, started, held is not None, on_hold)
        if not job.start_inline():
            logger.info("job %s: cancelled before it started; not run", job.id)
            return False
        watch = self.watchdog.watch(job.id, job.timeout_s, held is not None, lambda: self._time_out_inline(job), on_hold)
        try:
            output, error = run_as(job.traceparent, lambda: self._sync_body(job, kwargs)), None
        except BaseException as exc:  # noqa: B902 - user code may raise anything, SystemExit included
            output, error = None, exc
        self.watchdog.unwatch(watch)
        if not job.finish_inline():
            return False  # cancelled or timed out meanwhile: whoever detached it said so
        return self._report(job, output, error, time.monotonic() - started)

    def _time_out_inline(self, job: Job) -> None:
        """On the watchdog's thread: report the timeout, free the job's slot; the function runs on."""
        if not job.detach():
            return  # it finished just now
        self._report_timeout(job)
        self.on_detach(job)

    def _run_async(self, job: Job, kwargs: Dict[str, Any], started: float, holds: bool,
                   on_hold: Callable[[], None]) -> bool:
        # The task copies the submitting thread's context: the job's traceparent is its own.
        future = run_as(job.traceparent, lambda: self.loop.submit(self._async_body(job, kwargs)))
        future.add_done_callback(lambda _: job.wake.set())

        def time_out() -> None:
            job.timed_out = True
            job.wake.set()

        watch = self.watchdog.watch(job.id, job.timeout_s, holds, time_out, on_hold)
        job.wake.wait()
        self.watchdog.unwatch(watch)
        if job.cancelled:
            job.abandoned = True
            future.cancel()
            logger.info("job %s: cancelled by the platform after %.2f s; not reported", job.id, time.monotonic() - started)
            return False
        if job.timed_out and not future.done():
            job.abandoned = True
            future.cancel()
            self._report_timeout(job)
            return False
        try:
            output, error = future.result(), None
        except BaseException as exc:  # noqa: B902 - user code may raise anything, SystemExit included
            output, error = None, exc
        return self._report(job, output, error, time.monotonic() - started)

    def _report_timeout(self, job: Job) -> None:
        job.ended = True
        logger.warning("job %s: execution timeout of %.1f s reached", job.id, job.timeout_s)
        self.client.done(job.id, {"error": {
            "error_type": TIMEOUT_ERROR_TYPE,
            "error_message": f"job exceeded its execution timeout of {job.timeout_s:g} s",
            "error_traceback": ""}}, take_next=False)

    def _report(self, job: Job, output: Any, exc: Optional[BaseException], elapsed: float) -> bool:
        self.last_elapsed = elapsed  # the queue worker takes several jobs at once after fast ones
        job.ended = True
        if exc is not None:
            if isinstance(exc, _Abandoned) or job.abandoned:
                logger.info("job %s: stopped after %.2f s; the platform no longer holds it", job.id, elapsed)
                return False
            body = error_body(exc)
            # The traceback follows the line, so `svc logs` and the console show where it failed.
            logger.error("job %s: failed after %.2f s: %s: %s\n%s", job.id, elapsed, type(exc).__name__, exc,
                         body["error"]["error_traceback"].rstrip())
            self.client.done(job.id, body)
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
            # No line for a success: the platform writes one per completed job (docs/platform.md, "Hot path").
            self.client.done(job.id, {"output": output}, stream=self.is_stream, take_next=not refresh)
        except (TypeError, ValueError, RecursionError) as exc:  # not JSON: the job fails with why
            logger.error("job %s: output is not JSON after %.2f s: %s", job.id, elapsed, exc)
            self.client.done(job.id, error_body(OutputNotJSONError(_not_json_reason(exc))))
        return refresh
