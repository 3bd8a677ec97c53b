"""fanout.map_calls, the logic under `.map`: input order, bounded concurrency and read-ahead, named item errors."""
import random
import threading
import time

import pytest

from svc.errors import RemoteCallError
from svc.fanout import AHEAD_PER_SLOT, map_calls


def double(x: int = 0):
    return 2 * x


def test_results_come_in_input_order_whatever_order_they_finish_in():
    def call(payload):
        time.sleep(random.random() / 200)
        return double(**payload)
    assert list(map_calls(double, call, range(200), 16, False)) == [2 * i for i in range(200)]


def test_at_most_concurrency_calls_run_and_inputs_are_read_lazily_with_a_bounded_lead():
    running, peak, read = [0], [0], [0]
    lock = threading.Lock()

    def call(payload):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.001)
        with lock:
            running[0] -= 1
        return payload["x"]

    def inputs():
        for i in range(2_000):
            read[0] += 1
            yield {"x": i}

    results = map_calls(double, call, inputs(), 4, False)
    assert next(results) == 0
    time.sleep(0.05)  # the caller dawdles: the map must not run ahead of it without bound
    assert read[0] <= 1 + 4 * AHEAD_PER_SLOT + 4
    assert sum(1 for _ in results) == 1_999
    assert peak[0] <= 4


def test_a_failing_item_is_named_and_raised_at_its_turn_or_yielded():
    def call(payload):
        if payload["x"] == 3:
            raise RemoteCallError("boom", status="FAILED", job_id="j3")
        return payload["x"]
    out = list(map_calls(double, call, range(6), 2, True))
    assert out[:3] == [0, 1, 2] and out[4:] == [4, 5]
    assert isinstance(out[3], RemoteCallError) and out[3].index == 3 and out[3].job_id == "j3"
    assert str(out[3]) == "item 3 ({'x': 3}): boom"
    seen = []
    with pytest.raises(RemoteCallError, match=r"item 3 .*boom"):
        for value in map_calls(double, call, range(6), 2, False):
            seen.append(value)
    assert seen == [0, 1, 2]


def test_concurrency_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="concurrency"):
        list(map_calls(double, lambda p: p, [1], 0, False))
