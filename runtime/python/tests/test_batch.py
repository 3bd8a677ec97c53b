"""Request batching's logic (svc._batch): per-item input checks against the element types, the
items as one list per parameter, and one result per item back."""
import time
from typing import List

import pytest

from svc import Batch, Cron, Endpoint
from svc._batch import BatchResultError, batch_call_kwargs, item_kwargs, split_results
from svc.errors import InputValidationError


def embed(text: List[str], scale: List[float] = 1.0) -> List[dict]:
    return [{"text": t, "scale": s} for t, s in zip(text, scale)]


def test_each_item_is_checked_against_the_element_types_with_defaults_filled():
    assert item_kwargs(embed, {"text": "a"}) == {"text": "a", "scale": 1.0}
    assert item_kwargs(embed, {"text": "b", "scale": 2}) == {"text": "b", "scale": 2.0}
    with pytest.raises(InputValidationError, match=r"text: expected str, got 3"):
        item_kwargs(embed, {"text": 3})
    with pytest.raises(InputValidationError, match=r"colour: unknown field \(embed\(\) takes scale, text\)"):
        item_kwargs(embed, {"text": "a", "colour": "red"})


def test_items_become_one_list_per_parameter_in_order():
    items = [item_kwargs(embed, {"text": "a"}), item_kwargs(embed, {"text": "b", "scale": 3})]
    assert batch_call_kwargs(embed, items) == {"text": ["a", "b"], "scale": [1.0, 3.0]}
    assert embed(**batch_call_kwargs(embed, items)) == [{"text": "a", "scale": 1.0}, {"text": "b", "scale": 3.0}]


def test_results_split_per_item_an_exception_fails_its_item_only():
    boom = ValueError("bad item")
    assert split_results(embed, [{"ok": 1}, boom], 2) == [({"ok": 1}, None), (None, boom)]


def test_a_result_list_of_the_wrong_length_or_type_fails_every_item():
    for results in ([1], {"a": 1}):
        split = split_results(embed, results, 2)
        assert [type(error) for _, error in split] == [BatchResultError, BatchResultError]
    assert "returned 1 results for 2 inputs" in str(split_results(embed, [1], 2)[0][1])


def test_endpoint_takes_schedule_and_batch_on_a_queue_function_only():
    api = Endpoint(name="batch-lb", batch=Batch(max_size=4))
    with pytest.raises(ValueError, match="only a queue-based endpoint"):
        api.get("/x")(lambda: 1)
    assert Endpoint(name="nightly-sdk", schedule=Cron("0 3 * * *", timezone="Europe/Paris")).config.schedule.timezone == "Europe/Paris"
    with pytest.raises(ValueError, match="IANA time zone"):
        Endpoint(name="bad-zone", schedule=Cron("0 3 * * *", timezone="Mars/Olympus"))
    with pytest.raises(ValueError, match="max_size must be an integer from 1 to 64"):
        Endpoint(name="bad-batch", batch=Batch(max_size=65))


def test_a_batched_worker_calls_once_per_batch_of_up_to_max_size(platform, start_worker):
    ids = [platform.submit("batched", {"n": n}) for n in range(5)]  # queued before the worker starts
    start_worker("batched")
    jobs = [platform.wait_job(job_id) for job_id in ids]
    assert [job["status"] for job in jobs] == ["COMPLETED"] * 5
    assert [job["output"]["n"] for job in jobs] == [0, 1, 2, 3, 4]  # each job its own item's result
    assert [job["output"]["batch"] for job in jobs] == [4, 4, 4, 4, 1]


def test_a_batch_past_its_execution_timeout_times_out_its_jobs_and_the_worker_goes_on(platform, start_worker):
    worker = start_worker("batched")
    slow = [platform.submit("batched", {"n": n, "sleep": 5}, timeout_ms=300) for n in range(2)]
    for job in (platform.wait_job(job_id) for job_id in slow):
        assert job["status"] == "FAILED" and job["error"]["error_type"] == "ExecutionTimeoutError"
        assert "the batch exceeded its execution timeout of 0.3 s" in job["error"]["error_message"]
    started = time.monotonic()
    after = platform.wait_job(platform.submit("batched", {"n": 9}))
    assert after["status"] == "COMPLETED" and after["output"] == {"n": 9, "batch": 1}
    assert time.monotonic() - started < 3  # not behind the abandoned 5 s call
    assert "execution timeout of 0.3 s reached" in worker.output()
