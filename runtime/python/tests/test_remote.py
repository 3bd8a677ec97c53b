"""Cross-endpoint calls (contracts section 5) through the fake platform, with real workers on both sides."""
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
    assert "square on endpoint 'sq' failed" in job["output"]["remote_error"]
    assert "TypeError" in job["output"]["remote_error"]


def test_remote_polls_status_when_runsync_is_not_final(platform, start_worker, targets):
    platform.runsync_wait = 0  # runsync answers IN_QUEUE/IN_PROGRESS at once
    start_worker("caller-async")
    job = platform.wait_job(platform.submit("caller-async", {"x": 5}))
    assert job["output"] == {"sq": 25, "shout": "HI!"}
