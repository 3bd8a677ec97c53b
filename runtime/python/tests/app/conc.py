"""An endpoint whose module allows two jobs at once per worker."""
import os
import time

from svc import Endpoint


def concurrency_modifier(current: int) -> int:
    return 2


@Endpoint(name="conc")
def conc(role: str, flag: str) -> str:
    # "a" waits for "b" to create the flag: it only sees it when both jobs run at once.
    if role == "b":
        open(flag, "w").close()
        return "b"
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        if os.path.exists(flag):
            return "saw b"
        time.sleep(0.02)
    return "no b"
