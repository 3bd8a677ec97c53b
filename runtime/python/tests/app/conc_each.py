"""Two endpoints in one module: concurrency is each one's own (Endpoint(concurrency=N)), not the module's."""
import os
import time

from svc import Endpoint


def _gather(folder: str, me: str, want: int, wait_s: float) -> int:
    """Marks this job as running, then waits for `want` jobs to run at once; answers how many it saw."""
    open(os.path.join(folder, me), "w").close()
    deadline = time.monotonic() + wait_s
    while len(os.listdir(folder)) < want and time.monotonic() < deadline:
        time.sleep(0.02)
    return len(os.listdir(folder))


@Endpoint(name="conc-three", concurrency=3)
def three_at_once(folder: str, me: str) -> int:
    return _gather(folder, me, 3, 5)


@Endpoint(name="conc-one")
def one_at_once(folder: str, me: str) -> int:
    return _gather(folder, me, 2, 1)
