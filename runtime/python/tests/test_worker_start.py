"""A fresh queue worker's start: its first job-take goes out before any other request, and the event
loop thread waits for the first coroutine (issue 42: what a warm spare does between its claim and
its first job)."""
import asyncio
import threading
import time
from types import SimpleNamespace

from svc import _queue
from svc._loop import LoopThread
from svc._queue import QueueWorker


class RecordingClient:
    """The worker's side of the platform, recording the order of its calls."""

    def __init__(self) -> None:
        self.env = SimpleNamespace(ping_interval=10.0)
        self.calls = []
        self.worker = None

    def take(self, in_progress: bool):
        self.calls.append("take")
        self.worker.stop()
        return SimpleNamespace(status=204, body=None, text="")

    def ping(self, job_ids):
        self.calls.append("ping")

    def signals(self):
        self.calls.append("signals")
        time.sleep(0.5)
        return None


def test_the_first_job_take_goes_out_before_the_heartbeat_and_the_signals_poll(monkeypatch):
    monkeypatch.setattr(_queue, "SIDE_POLLS_AFTER_S", 0.3)
    client = RecordingClient()
    worker = QueueWorker(client, runner=None, default_timeout_s=None)  # type: ignore[arg-type]
    client.worker = worker
    assert worker.run() == 0
    assert client.calls == ["take"]  # run() returned within the side threads' wait
    deadline = time.monotonic() + 5
    while not {"ping", "signals"} <= set(client.calls) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert client.calls[0] == "take" and {"ping", "signals"} <= set(client.calls)


def test_the_event_loop_thread_starts_with_the_first_coroutine():
    def loop_threads():
        return [t for t in threading.enumerate() if t.name == "svc-event-loop"]

    before = len(loop_threads())
    loop = LoopThread()
    assert len(loop_threads()) == before

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    assert loop.submit(answer()).result(timeout=5) == 42
    assert len(loop_threads()) == before + 1
    assert loop.submit(answer()).result(timeout=5) == 42
    assert len(loop_threads()) == before + 1
