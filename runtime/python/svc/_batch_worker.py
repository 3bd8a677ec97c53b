"""The queue worker of a batched endpoint: take up to `max_size` jobs, waiting at most
`max_wait_ms` after the first to fill the batch, call the function once with all of them, report
each job on its own (docs/platform.md, "Request batching"; the logic is ._batch).

Jobs come from job-take with `batch_size` (the worker protocol's batch take) and, while the batch
fills, `wait_ms` (the embedded platform holds the poll no longer than what is left of the wait).
Results go in one jobs-done request where the platform has one (._done_batch), else one job-done
each. A call runs off the loop's thread so that the batch's execution timeout (the shortest of its
jobs') can end it: its jobs are reported `ExecutionTimeoutError` (TIMED_OUT) at once and the next
batch goes on while the abandoned call runs out (a sync function cannot be interrupted; an async
one is cancelled), as ._jobs does for one job. A cancel drops that job's result.
"""
import concurrent.futures
import inspect
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from . import _heartbeat, _http, _signals
from ._batch import batch_call_kwargs, item_kwargs, split_results
from ._done_batch import BatchingClient
from ._jobs import TIMEOUT_ERROR_TYPE, OutputNotJSONError, _not_json_reason, error_body, in_daemon_thread
from ._log import logger
from ._loop import LoopThread
from ._platform import MIN_EMPTY_POLL_S, WorkerClient

BACKOFF_S = 1.0


class BatchWorker:
    def __init__(self, client: WorkerClient, fn: Callable, loop: LoopThread, max_size: int, max_wait_ms: float,
                 default_timeout_s: Optional[float] = None) -> None:
        self.client, self.fn, self.loop = client, fn, loop
        self.default_timeout_s = default_timeout_s
        self.max_size, self.max_wait_s = max_size, max_wait_ms / 1000
        self.running: List[str] = []
        self.stopping = threading.Event()
        self.exit_code = 0
        self._reporting_left = 0
        if isinstance(client, BatchingClient):  # the batch's results go together, in one jobs-done
            client.more_follow = lambda: self._reporting_left > 0

    def stop(self) -> None:
        if not self.stopping.is_set():
            logger.info("stop requested: finishing the running batch (%d job(s))", len(self.running))
        self.stopping.set()

    def _take(self, n: int, wait_s: Optional[float]) -> List[Dict[str, Any]]:
        """Up to n jobs; [] when none came (after a pause where the platform said to back off)."""
        url = f"{self.client.env.take_url}{'&' if '?' in self.client.env.take_url else '?'}job_in_progress=0&batch_size={n}"
        if wait_s is not None:
            url += f"&wait_ms={max(0, int(wait_s * 1000))}"
        started = time.monotonic()
        try:
            resp = _http.request("GET", url, token=self.client.env.token, timeout=30)
        except _http.TransportError as err:
            logger.warning("job-take failed (%s); retrying in %.1f s", err, BACKOFF_S)
            self.stopping.wait(BACKOFF_S)
            return []
        if resp.status == 200:
            body = resp.body
            return [j for j in (body if isinstance(body, list) else [body]) if isinstance(j, dict) and "id" in j]
        if resp.status in (401, 403):
            logger.error("job-take refused our token (HTTP %s): this worker is no longer registered", resp.status)
            self.exit_code = 1
            self.stop()
        elif resp.status != 204:
            logger.warning("job-take answered HTTP %s: %s", resp.status, resp.text[:200])
            self.stopping.wait(BACKOFF_S)
        elif wait_s is None:  # an empty long poll: guard against a platform that answers without holding
            self.stopping.wait(max(0.0, MIN_EMPTY_POLL_S - (time.monotonic() - started)))
        return []

    def _fill(self) -> List[Dict[str, Any]]:
        """One batch: the first job(s) by long poll, then more until full or max_wait_ms is over."""
        jobs = self._take(self.max_size, None)
        deadline = time.monotonic() + self.max_wait_s
        while jobs and len(jobs) < self.max_size and not self.stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            more = self._take(self.max_size - len(jobs), left)
            if not more and time.monotonic() >= deadline:
                break
            jobs += more
        return jobs

    def _call(self, kwargs: Dict[str, List[Any]], timeout_s: Optional[float]) -> Any:
        """The function's return; concurrent.futures.TimeoutError once `timeout_s` has passed."""
        if inspect.iscoroutinefunction(self.fn):
            future = self.loop.submit(self.fn(**kwargs))
        else:
            future = in_daemon_thread(lambda: self.fn(**kwargs), "svc-batch-call")
        try:
            return future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()  # an async call stops; a sync one runs out, its result dropped
            raise

    def _timeout_of(self, jobs: List[Dict[str, Any]]) -> Optional[float]:
        limits = [j["executionTimeoutMs"] / 1000 for j in jobs if j.get("executionTimeoutMs")]
        return min(limits) if limits else self.default_timeout_s

    def _report(self, job_id: str, output: Any, error: Optional[BaseException]) -> None:
        self._reporting_left -= 1
        try:
            self.client.done(job_id, error_body(error) if error is not None else {"output": output})
        except (TypeError, ValueError, RecursionError) as exc:  # not JSON: this job fails with why
            self.client.done(job_id, error_body(OutputNotJSONError(_not_json_reason(exc))))

    def _run(self, jobs: List[Dict[str, Any]]) -> None:
        started = time.monotonic()
        self.running = [str(j["id"]) for j in jobs]
        self._reporting_left = len(jobs)
        good: List[str] = []
        items: List[Dict[str, Any]] = []
        for job in jobs:  # input checked per item: a bad one fails its own job only
            try:
                items.append(item_kwargs(self.fn, job.get("input")))
                good.append(str(job["id"]))
            except Exception as exc:
                logger.info("job %s: rejected input: %s", job["id"], exc)
                self._report(str(job["id"]), None, exc)
        if items:
            timeout_s = self._timeout_of([j for j in jobs if str(j["id"]) in good])
            try:
                results = split_results(self.fn, self._call(batch_call_kwargs(self.fn, items), timeout_s), len(items))
            except concurrent.futures.TimeoutError:
                logger.warning("batch of %d: execution timeout of %.1f s reached", len(items), timeout_s)
                timed_out = {"error": {"error_type": TIMEOUT_ERROR_TYPE, "error_traceback": "",
                                       "error_message": f"the batch exceeded its execution timeout of {timeout_s:g} s"}}
                for job_id in good:
                    self._reporting_left -= 1
                    self.client.done(job_id, timed_out)
                self.running = []
                return
            except BaseException as exc:  # noqa: B902 - user code may raise anything: every item fails with it
                logger.error("batch of %d failed after %.2f s: %s: %s", len(items), time.monotonic() - started, type(exc).__name__, exc)
                results = [(None, exc)] * len(items)
            for job_id, (output, error) in zip(good, results):
                self._report(job_id, output, error)
        logger.info("batch of %d job(s) (%d called) done in %.3f s", len(jobs), len(items), time.monotonic() - started)
        self.running = []

    def run(self) -> int:
        _heartbeat.start(self.client, self.client.env.ping_interval, lambda: list(self.running))
        _signals.start(self.client, lambda job_id: None, self.stop)  # a cancelled job's result is dropped by the platform
        while not self.stopping.is_set():
            jobs = self._fill()
            if jobs:
                self._run(jobs)
        logger.info("worker exiting (code %d)", self.exit_code)
        return self.exit_code
