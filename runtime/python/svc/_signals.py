"""Signals thread: long-polls the platform for `cancel` and `stop` (contracts section 4)."""
import threading
import time
from typing import Callable

from . import _http
from ._log import logger
from ._platform import MIN_EMPTY_POLL_S, WorkerClient

ERROR_BACKOFF_S = 1.0


def start(client: WorkerClient, on_cancel: Callable[[str], None], on_stop: Callable[[], None], first_after: float = 0) -> threading.Thread:
    def listen() -> None:
        time.sleep(first_after)
        while True:
            started = time.monotonic()
            try:
                signal = client.signals()
            except _http.TransportError as err:
                logger.debug("signals poll failed: %s", err)
                time.sleep(ERROR_BACKOFF_S)
                continue
            if not signal:
                if time.monotonic() - started < MIN_EMPTY_POLL_S:  # a platform that does not hold the poll
                    time.sleep(MIN_EMPTY_POLL_S)
                continue
            for job_id in signal.get("cancel") or []:
                on_cancel(str(job_id))
            if signal.get("stop"):
                on_stop()

    thread = threading.Thread(target=listen, name="svc-signals", daemon=True)
    thread.start()
    return thread
