"""Heartbeat thread: a worker silent for 3 ping intervals is declared dead by the platform."""
import threading
import time
from typing import Callable, Iterable

from . import _http
from ._log import logger
from ._platform import WorkerClient


def start(client: WorkerClient, interval: float, current_jobs: Callable[[], Iterable[str]], first_after: float = 0) -> threading.Thread:
    def beat() -> None:
        failing = False
        time.sleep(first_after)
        while True:
            try:
                client.ping(current_jobs())
                if failing:
                    logger.info("heartbeat: platform reachable again")
                failing = False
            except _http.TransportError as err:
                if not failing:  # one line per outage, not one per beat
                    logger.warning("heartbeat failed: %s", err)
                failing = True
            time.sleep(interval)

    thread = threading.Thread(target=beat, name="svc-heartbeat", daemon=True)
    thread.start()
    return thread
