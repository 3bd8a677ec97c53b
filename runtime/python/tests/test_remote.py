"""Cross-endpoint calls (contracts section 5) through the fake platform, with real workers on both sides."""
import json
import pytest


@pytest.fixture
def targets(start_worker):
    start_worker("sq")
    start_worker("api")


def test_sync_caller_calls_a_queue_endpoint_and_a_load_balanced_one(platform, start_worker, targets):
    start_worker("caller-sync")
    job = platform.wait_job(platform.submit("caller-sync", {"x": 4}))
    assert job["output"] == {"sq": 16, "add": 5}
    sq_jobs = [j for j in platform.jobs.values() if j["endpoint"] == "sq"]
    assert [j["input"] for j in sq_jobs] == [{"x": 4}]  # it really went through the platform's queue
    assert platform.graphql_calls == 1  # URLs are fetched once and cached


def test_async_caller(platform, start_worker, targets):
    start_worker("caller-async")
    job = platform.wait_job(platform.submit("caller-async", {"x": 3}))
    assert job["output"] == {"sq": 9, "shout": "HI!"}


def test_remote_failure_raises_remote_call_error(platform, start_worker, targets):
    start_worker("caller-sync")
    job = platform.wait_job(platform.submit("caller-sync", {"x": "a"}))
    assert job["output"]["status"] == "FAILED"
    assert job["output"]["remote_error"].startswith("TypeError: ")  # the remote exception first, as the TS client shows it
    assert "(square on endpoint 'sq', job " in job["output"]["remote_error"]
    assert "Traceback" not in job["output"]["remote_error"]


def test_a_failure_reads_type_and_message_first_and_keeps_the_traceback_apart():
    from svc.remote import failure
    trace = 'Traceback (most recent call last):\n  File "app.py", line 3, in sq\nValueError: item 500 is cursed\n'
    reported = json.dumps({"error_type": "ValueError", "error_message": "item 500 is cursed", "error_traceback": trace})
    err = failure("sq", "square", reported, "FAILED", "j1")  # the platform hands the worker's fields over as JSON text
    assert str(err) == "ValueError: item 500 is cursed (sq on endpoint 'square', job j1, FAILED)"
    assert (err.error_type, err.traceback, err.status, err.job_id) == ("ValueError", trace, "FAILED", "j1")
    assert str(failure("sq", "square", "CANCELLED", "CANCELLED", "j2")) == "CANCELLED (sq on endpoint 'square', job j2)"
    plain = failure("sq", "square", "connection refused", "unreachable")
    assert str(plain) == "connection refused (sq on endpoint 'square', unreachable)" and plain.traceback is None


def test_remote_polls_status_when_runsync_is_not_final(platform, start_worker, targets):
    platform.runsync_wait = 0  # runsync answers IN_QUEUE/IN_PROGRESS at once
    start_worker("caller-async")
    job = platform.wait_job(platform.submit("caller-async", {"x": 5}))
    assert job["output"] == {"sq": 25, "shout": "HI!"}


def test_a_call_of_a_batched_function_with_lists_runs_one_job_per_item(platform, start_worker):
    start_worker("batched")
    start_worker("caller-batched")
    job = platform.wait_job(platform.submit("caller-batched", {"ns": [3, 1, 2]}))
    out = job["output"].get("out")
    assert [item["n"] for item in out] == [3, 1, 2], job["output"]  # each item its own job, outputs in order
    items = [j for j in platform.jobs.values() if j["endpoint"] == "batched"]
    assert sorted(j["input"]["n"] for j in items) == [1, 2, 3]


def test_a_batched_call_splits_lists_per_item_and_repeats_the_rest():
    from svc._batch_call import per_item

    def embed(text, scale=1.0):
        return text
    assert per_item(embed, {"text": ["a", "b"], "scale": 2}) == [{"text": "a", "scale": 2}, {"text": "b", "scale": 2}]
    with pytest.raises(ValueError, match=r"must be as long as each other \(text: 2, scale: 3\)"):
        per_item(embed, {"text": ["a", "b"], "scale": [1, 2, 3]})
