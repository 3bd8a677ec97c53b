"""Queue-based test endpoints: one per behaviour the worker must show."""
import asyncio
import json
import os
import time

from svc import Endpoint, InputValidationError


@Endpoint(name="echo")
def echo(text: str, sleep: float = 0.0, release: str = "") -> dict:
    """Echo the text back; with `release`, only once the test creates that file (then writes `<release>.done`)."""
    time.sleep(sleep)
    deadline = time.monotonic() + 30
    while release and not os.path.exists(release) and time.monotonic() < deadline:
        time.sleep(0.01)
    if release:
        open(release + ".done", "w").close()
    return {"echo": text, "pid": os.getpid()}


@Endpoint(name="aecho")
async def aecho(text: str, sleep: float = 0.0, marker: str = "") -> dict:
    if marker:
        open(marker + ".started", "w").close()
    try:
        await asyncio.sleep(sleep)
    except asyncio.CancelledError:
        if marker:  # lets the test see that the task really was cancelled
            with open(marker, "w") as handle:
                handle.write("cancelled")
        raise
    return {"echo": text}


@Endpoint(name="gen")
def gen(n: int):
    for i in range(n):
        yield {"i": i}


@Endpoint(name="agen")
async def agen(n: int):
    for i in range(n):
        await asyncio.sleep(0)
        yield i * 10


def _parse(text: str):
    return json.loads(text)  # fails in the stdlib, called from the app's own code


@Endpoint(name="outcome")
def outcome(mode: str):
    if mode == "raise":
        raise ValueError("bad value 42")
    if mode == "deep":
        return _parse("{not json")
    if mode == "input":
        raise InputValidationError("prompt is required")
    if mode == "return-error":
        return {"error": "nothing to do"}
    if mode == "refresh":
        return {"refresh_worker": True, "ok": 1}
    if mode == "not-json":
        return {"value": object()}
    if mode == "nan":
        return {"value": float("nan")}
    return {"ok": True}
