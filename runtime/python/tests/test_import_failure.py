"""A module that cannot be imported: the worker keeps serving and answers with the import error
(QB: every job FAILED; LB: 503 on every route, /ping healthy) instead of crash-looping."""
import time

from test_lb_worker import call

REMEDY = "Import packages inside the endpoint function body, not at file top."


def test_queue_worker_fails_every_job_with_the_import_error_and_reports_it(platform, start_worker):
    first = platform.submit("broken", {"value": 1})
    worker = start_worker("broken")
    job = platform.wait_job(first)
    assert job["status"] == "FAILED"
    error = job["error"]
    assert error["error_type"] == "ModuleNotFoundError"
    assert (error["file"], error["line"]) == ("app/broken.py", 4)
    assert error["remedy"] == REMEDY
    assert "No module named 'not_installed_pkg'" in error["error_message"]
    assert "app/broken.py:4" in error["error_message"] and REMEDY in error["error_message"]
    assert "import not_installed_pkg" in error["error_traceback"]
    # the worker stays up: later jobs fail the same way, fast
    started = time.monotonic()
    later = [platform.submit("broken", {"value": i}) for i in range(5)]
    for job_id in later:
        assert platform.wait_job(job_id)["error"]["error_type"] == "ModuleNotFoundError"
    assert time.monotonic() - started < 5
    assert worker.proc.poll() is None
    reported = platform.wait_for(lambda: platform.reported_errors)
    assert reported[0]["worker"] == worker.id and reported[0]["error"]["error_type"] == "ModuleNotFoundError"
    assert "cannot import endpoint broken" in worker.output()


def test_stop_signal_still_stops_a_worker_whose_module_did_not_import(platform, start_worker):
    worker = start_worker("broken")
    platform.wait_for(lambda: platform.reported_errors)
    platform.stop_worker(worker.id)
    assert worker.wait_exit() == 0


def test_load_balanced_worker_answers_503_with_the_import_error_and_stays_pingable(start_worker):
    worker = start_worker("broken-api")
    assert call(worker, "GET", "/ping") == (200, {"status": "healthy"})
    status, body = call(worker, "GET", "/hello")
    assert status == 503
    assert body["error_type"] == "ModuleNotFoundError"
    assert (body["file"], body["line"], body["remedy"]) == ("app/broken.py", 4, REMEDY)
    assert "No module named 'not_installed_pkg'" in body["error"]
    assert "error_traceback" not in body  # the traceback goes to the worker log only
    assert call(worker, "POST", "/execute", {"function": "hello", "input": {}})[0] == 503
