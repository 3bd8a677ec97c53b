"""The queue-based worker: take jobs, run them, report them, until told to stop."""
import threading
from collections import OrderedDict, deque
import time
from typing import Any, Callable, Dict, List, Optional

from . import _heartbeat, _http, _signals
from ._done_batch import BatchingClient
from ._jobs import Job, JobRunner, in_daemon_thread
from ._log import logger
from ._platform import MIN_EMPTY_POLL_S, WorkerClient

TOO_MANY_REQUESTS_BACKOFF_S = 1.0
ERROR_BACKOFF_MAX_S = 10.0
UNREACHABLE_EXIT_S = 60.0  # a platform gone this long will not hand our jobs back to us
EARLY_CANCELS_KEPT = 256
PREFETCH = 8  # jobs a thread takes at once when its function is fast and results go in batches
FAST_JOB_S = 0.01  # "fast": the last job ran less than this
# The heartbeat's and the signals' first requests wait this long, so the first job-take goes out
# alone: three threads sending their first request at once held a fresh worker's take back 7-12 ms
# (the GIL changes hands every 5 ms), the wait between a warm spare's claim and its first job.
SIDE_POLLS_AFTER_S = 0.02


class _Lane:
    """Jobs one thread runs one after another: the first it was started with, then those handed to
    it in job-done answers (booked as running). A lane whose function was detached (timeout,
    cancel) gives the rest to a new thread."""

    __slots__ = ("queue", "detached")

    def __init__(self, first: Optional[Job] = None) -> None:
        self.queue: "deque[Job]" = deque([first] if first else [])
        self.detached = False


class QueueWorker:
    def __init__(self, client: WorkerClient, runner: JobRunner, default_timeout_s: Optional[float],
                 concurrency_modifier: Optional[Callable[[int], int]] = None) -> None:
        self.client = client
        self.runner = runner
        self.default_timeout_s = default_timeout_s
        self.modifier = concurrency_modifier
        self.concurrency = 1
        self.running: Dict[str, Job] = {}
        self.early_cancels: "OrderedDict[str, None]" = OrderedDict()  # cancels for jobs not yet started
        self.cond = threading.Condition()
        self.stopping = threading.Event()
        self.exit_code = 0
        self._local = threading.local()  # `.lane`: the _Lane this thread runs
        self.batching = isinstance(client, BatchingClient)
        client.wants_next = self._wants_next
        client.on_next = self._handed_next
        if isinstance(client, BatchingClient):
            client.more_follow = lambda: bool(self._lane() and self._lane().queue)
        if isinstance(runner, JobRunner):
            runner.on_detach = self._release

    # -- called from other threads -------------------------------------------------------------
    def job_ids(self) -> List[str]:
        with self.cond:
            return list(self.running)

    def cancel(self, job_id: str) -> None:
        with self.cond:
            job = self.running.get(job_id)
            if job is None:
                # The signal can overtake the job-take answer that hands us this job: remember it.
                self.early_cancels[job_id] = None
                while len(self.early_cancels) > EARLY_CANCELS_KEPT:
                    self.early_cancels.popitem(last=False)
        if job and job.cancel():  # a sync function: it runs on, its slot and the jobs behind it move on now
            logger.info("job %s: cancelled by the platform; its function runs on, its result will be dropped", job.id)
            self._release(job)

    def _unfinished(self) -> int:
        """Jobs whose function still runs. Not a job whose result is being sent: its thread may hold it
        while its jobs-done waits for the next job (an idle worker's last job, long done)."""
        with self.cond:
            return sum(1 for job in self.running.values() if not job.ended)

    def stop(self) -> None:
        """Take no new job; the loop exits once the running ones are done."""
        if not self.stopping.is_set():
            logger.info("stop requested: finishing %d running job(s)", self._unfinished())
        self.stopping.set()
        with self.cond:
            self.cond.notify_all()

    # -- the loop -------------------------------------------------------------------------------
    def _limit(self) -> int:
        if self.modifier:
            try:
                self.concurrency = max(1, int(self.modifier(self.concurrency)))
            except Exception as exc:  # a broken modifier must not kill the worker
                logger.error("concurrency_modifier failed, keeping %d: %s", self.concurrency, exc)
        return self.concurrency

    def _lane(self) -> Optional[_Lane]:
        return getattr(self._local, "lane", None)

    def _wants_next(self) -> int:
        """Asked on a job's thread while its job still counts as running: how many jobs to take next.

        One per free slot; PREFETCH when results go in batches and the last job was fast (the
        jobs run one after another on this thread, their results sent together)."""
        if self.stopping.is_set() or self._lane() is None:
            return 0
        with self.cond:
            room = self.concurrency - len(self.running) + 1
        if room > 0 and self.batching and getattr(self.runner, "last_elapsed", 1.0) < FAST_JOB_S:
            return max(room, PREFETCH)
        return max(room, 0)

    def _handed_next(self, payload: Dict[str, Any]) -> None:
        lane = self._lane()
        if lane is None:
            self._start(payload)
            return
        with self.cond:
            job = self._admit(payload)  # booked now: pings, cancels and stop see it
            if job is not None:
                job.lane = lane
                lane.queue.append(job)  # run by _run_lane after the current one

    def _run_lane(self, lane: _Lane) -> None:
        self._local.lane = lane
        try:
            while True:
                with self.cond:
                    job = lane.queue.popleft() if lane.queue and not lane.detached else None
                if job is None:
                    return
                try:
                    if job.cancelled:
                        logger.info("job %s: cancelled before it started; not run", job.id)
                    elif self.runner.run(job):
                        logger.info("job %s asked for a fresh worker (refresh_worker): stopping", job.id)
                        self.stop()
                except Exception:  # a bug here must not leave the slot taken forever
                    logger.exception("job %s: runtime error", job.id)
                finally:
                    if not lane.queue and self.batching:
                        self.client.flush()  # results held for a job that did not report
                    with self.cond:
                        if self.running.get(job.id) is job:
                            del self.running[job.id]
                        if len(self.running) < self.concurrency or self.stopping.is_set():
                            self.cond.notify_all()  # a slot is free (not when the next job took it over)
        finally:
            self._local.lane = None  # this thread may run other work next

    def _release(self, job: Job) -> None:
        """A detached job (its sync function runs on): frees its slot, the jobs behind it go to a new thread."""
        rest = _Lane()
        with self.cond:
            if self.running.get(job.id) is job:
                del self.running[job.id]
            lane = job.lane
            if lane is not None:
                lane.detached = True
                rest.queue.extend(lane.queue)
                lane.queue.clear()
                for queued in rest.queue:
                    queued.lane = rest
            self.cond.notify_all()
        if rest.queue:
            in_daemon_thread(lambda: self._run_lane(rest), f"svc-job-{rest.queue[0].id}")

    def _admit(self, payload: Dict[str, Any]) -> Optional[Job]:
        """A job from the platform, booked as running (None when a cancel overtook it). Holds self.cond."""
        timeout_ms = payload.get("executionTimeoutMs")
        job = Job(id=str(payload["id"]), input=payload.get("input"),
                  timeout_s=timeout_ms / 1000 if timeout_ms else self.default_timeout_s,
                  traceparent=payload.get("traceparent"))
        if job.id in self.early_cancels:
            del self.early_cancels[job.id]
            logger.info("job %s: cancelled before it started; not run", job.id)
            return None
        self.running[job.id] = job
        return job

    def _start(self, payload: Dict[str, Any]) -> None:
        with self.cond:
            job = self._admit(payload)
            if job is None:
                return
            lane = job.lane = _Lane(job)
        # on an idle thread of an earlier job when there is one: no thread start per job
        in_daemon_thread(lambda: self._run_lane(lane), f"svc-job-{job.id}")

    def _take(self) -> Optional[float]:
        """One job-take; returns how long to wait before the next one."""
        resp = self.client.take(in_progress=bool(self.job_ids()))
        if resp.status == 200 and isinstance(resp.body, dict) and "id" in resp.body:
            self._start(resp.body)
            return 0
        if resp.status == 204:
            return None
        if resp.status == 429:
            return TOO_MANY_REQUESTS_BACKOFF_S
        if resp.status in (401, 403):
            logger.error("job-take refused our token (HTTP %s): this worker is no longer registered", resp.status)
            self.exit_code = 1
            self.stop()
            return 0
        logger.warning("job-take answered HTTP %s: %s", resp.status, resp.text[:200])
        return TOO_MANY_REQUESTS_BACKOFF_S

    def run(self) -> int:
        _heartbeat.start(self.client, self.client.env.ping_interval, self.job_ids, first_after=SIDE_POLLS_AFTER_S)
        _signals.start(self.client, self.cancel, self.stop, first_after=SIDE_POLLS_AFTER_S)
        error_backoff, unreachable_since = 0.5, None
        while not self.stopping.is_set():
            limit = self._limit()
            with self.cond:
                if len(self.running) >= limit:  # re-check the limit at least once a second
                    self.cond.wait(1.0)
                    continue
            started = time.monotonic()
            try:
                pause = self._take()
                error_backoff, unreachable_since = 0.5, None
            except _http.TransportError as err:
                now = time.monotonic()
                unreachable_since = unreachable_since or now
                if now - unreachable_since > UNREACHABLE_EXIT_S:
                    logger.error("platform unreachable for %.0f s: exiting", now - unreachable_since)
                    self.exit_code = 1
                    self.stop()
                    break
                logger.warning("job-take failed (%s); retrying in %.1f s", err, error_backoff)
                pause, error_backoff = error_backoff, min(error_backoff * 2, ERROR_BACKOFF_MAX_S)
            if pause is None:  # 204: no job; guard against a platform that answers without holding
                pause = max(0.0, MIN_EMPTY_POLL_S - (time.monotonic() - started))
            if pause:
                self.stopping.wait(pause)
        with self.cond:
            while self.running:
                self.cond.wait()
        logger.info("worker exiting (code %d)", self.exit_code)
        return self.exit_code
