"""One event loop on a daemon thread: every async function of the app runs there.

asyncio is imported with the first coroutine: a worker whose functions are all sync never
imports it (~20 ms of an interpreter's start here).
"""
import threading
from typing import TYPE_CHECKING, Any, Coroutine, Optional

if TYPE_CHECKING:
    import asyncio
    import concurrent.futures


class LoopThread:
    """Started by the first coroutine: a worker whose functions are all sync never starts it, and
    a fresh worker's first job does not wait on its start (issue 42)."""

    def __init__(self) -> None:
        self._loop: "Optional[asyncio.AbstractEventLoop]" = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> "asyncio.AbstractEventLoop":
        import asyncio

        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=self._run, args=(loop,), name="svc-event-loop", daemon=True).start()
                self._loop = loop
            return self._loop

    @staticmethod
    def _run(loop: "asyncio.AbstractEventLoop") -> None:
        import asyncio

        asyncio.set_event_loop(loop)
        loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, Any]) -> "concurrent.futures.Future[Any]":
        """Schedule `coro`; cancelling the returned future cancels the task."""
        import asyncio

        return asyncio.run_coroutine_threadsafe(coro, self.loop)
