"""Deadlines of running queue jobs, kept by one thread (docs/platform.md, "Hot path").

A sync function runs on the thread that took its job: handing it to another thread and waiting
for it wakes two threads per job, which costs more than a fast function itself. Nothing can
interrupt the thread then, so this thread keeps the two deadlines a running job has: its execution
timeout (`on_timeout`) and, while its lane holds finished jobs' results back for one batched
request, HOLD_S after it started (`on_hold`: the results go out, a slow function never keeps them
waiting). It sleeps until the earliest deadline and is woken only when a job brings an earlier one;
under load it wakes at most once per HOLD_S rather than once per job. Between jobs (none watched) it
waits IDLE_S before it sleeps for good: jobs that follow each other closely never wake it.
"""
import threading
import time
from typing import Callable, Dict, Optional

from ._log import logger

HOLD_S = 0.002  # how long held results may wait on the job running after them
IDLE_S = 1.0  # with nothing to watch, how long the thread waits before it sleeps for good


class Watch:
    """One running job's deadlines (monotonic seconds; None: none)."""

    __slots__ = ("key", "timeout_at", "hold_at", "on_timeout", "on_hold")

    def __init__(self, key: str, timeout_at: Optional[float], hold_at: Optional[float],
                 on_timeout: Callable[[], None], on_hold: Callable[[], None]) -> None:
        self.key, self.timeout_at, self.hold_at = key, timeout_at, hold_at
        self.on_timeout, self.on_hold = on_timeout, on_hold

    def next_at(self) -> Optional[float]:
        times = [t for t in (self.timeout_at, self.hold_at) if t is not None]
        return min(times) if times else None


class Watchdog:
    def __init__(self) -> None:
        self._watches: Dict[int, Watch] = {}
        self._cond = threading.Condition()
        self._wake_at = float("inf")  # when the thread wakes next, by its own plan
        self._thread: Optional[threading.Thread] = None
        self._watched = 0  # jobs watched so far: an idle wait that saw none come sleeps for good

    def watch(self, key: str, timeout_s: Optional[float], holds: bool,
              on_timeout: Callable[[], None], on_hold: Callable[[], None]) -> Optional[Watch]:
        """Starts watching a job; None when it has no deadline at all. Pair with `unwatch`."""
        if timeout_s is None and not holds:
            return None
        now = time.monotonic()
        w = Watch(key, None if timeout_s is None else now + timeout_s, now + HOLD_S if holds else None,
                  on_timeout, on_hold)
        at = w.next_at()
        with self._cond:
            self._watches[id(w)] = w
            self._watched += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="svc-watchdog", daemon=True)
                self._thread.start()
            elif at is not None and at < self._wake_at:
                self._cond.notify()
        return w

    def unwatch(self, w: Optional[Watch]) -> None:
        """The job ended; its deadlines are dropped (the thread is not woken for that)."""
        if w is not None:
            with self._cond:
                self._watches.pop(id(w), None)

    def _due(self, now: float):
        """Pops what is due now (under the lock); the callbacks run outside it."""
        due = []
        for key, w in list(self._watches.items()):
            if w.timeout_at is not None and w.timeout_at <= now:
                del self._watches[key]
                if w.hold_at is not None:
                    due.append(w.on_hold)
                due.append(w.on_timeout)
            elif w.hold_at is not None and w.hold_at <= now:
                w.hold_at = None
                due.append(w.on_hold)
        return due

    def _run(self) -> None:
        seen = -1  # self._watched at the last wait with nothing to watch
        while True:
            with self._cond:
                now = time.monotonic()
                due = self._due(now)
                if not due:
                    times = [t for t in (w.next_at() for w in self._watches.values()) if t is not None]
                    if times:  # at most one wake per HOLD_S: a finished job's stale deadline is not worth one each
                        self._wake_at = max(min(times), now + HOLD_S)
                    elif seen != self._watched:  # jobs came since the last idle wait: more may follow
                        seen, self._wake_at = self._watched, now + IDLE_S
                    else:
                        self._wake_at = float("inf")
                    self._cond.wait(None if self._wake_at == float("inf") else self._wake_at - now)
                    continue
            for callback in due:
                try:
                    callback()
                except Exception:  # a failing report must not stop the deadlines of other jobs
                    logger.exception("watchdog: handling a job's deadline failed")
