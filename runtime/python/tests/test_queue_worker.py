"""Queue-based workers end to end: `serve()` in a subprocess against the fake platform."""
import signal
import time

import pytest


def test_sync_job_completes_with_output(platform, start_worker):
    worker = start_worker("echo")
    job = platform.wait_job(platform.submit("echo", {"text": "hi"}))
    assert job["status"] == "COMPLETED"
    assert job["output"] == {"echo": "hi", "pid": worker.proc.pid}
    assert platform.done_calls_for(job["id"])[0]["isStream"] == "false"


def test_async_job_completes_and_a_failed_one_is_logged_by_name(platform, start_worker):
    worker = start_worker("aecho")
    job = platform.wait_job(platform.submit("aecho", {"text": "yo"}))
    assert (job["status"], job["output"]) == ("COMPLETED", {"echo": "yo"})
    failed = platform.wait_job(platform.submit("aecho", {"wrong": 1}))
    assert failed["status"] == "FAILED"
    platform.wait_for(lambda: f"job {failed['id']}: rejected input" in worker.output())
    # A success has no line from the worker: the platform writes it (docs/platform.md, "Hot path").
    assert job["id"] not in worker.output()


def test_generator_streams_each_chunk_then_reports_the_list(platform, start_worker):
    start_worker("gen")
    job = platform.wait_job(platform.submit("gen", {"n": 3}))
    assert job["stream"] == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert job["output"] == job["stream"]
    assert platform.done_calls_for(job["id"])[-1]["isStream"] == "true"


def test_async_generator_streams(platform, start_worker):
    start_worker("agen")
    job = platform.wait_job(platform.submit("agen", {"n": 3}))
    assert job["stream"] == [0, 10, 20] and job["output"] == [0, 10, 20]
    assert platform.done_calls_for(job["id"])[-1]["isStream"] == "true"


def test_exception_fails_job_with_type_message_and_traceback(platform, start_worker):
    start_worker("outcome")
    job = platform.wait_job(platform.submit("outcome", {"mode": "raise"}))
    assert job["status"] == "FAILED"
    assert job["error"]["error_type"] == "ValueError"
    assert job["error"]["error_message"] == "bad value 42"
    assert 'raise ValueError("bad value 42")' in job["error"]["error_traceback"]


def test_a_failed_jobs_traceback_keeps_the_last_frames_and_marks_the_apps_own(platform, start_worker):
    worker = start_worker("outcome")
    job = platform.wait_job(platform.submit("outcome", {"mode": "deep"}))
    trace = job["error"]["error_traceback"]
    assert job["error"]["error_type"] == "JSONDecodeError"
    lines = trace.splitlines()
    assert lines[0] == "Traceback (most recent call last; > marks the app's own code):"
    # the app's frames, relative to the app's folder, marked; the stdlib's below them, unmarked
    assert lines[1].startswith("> app/jobs.py:") and lines[1].endswith(" in outcome")
    assert any(line.startswith("> app/jobs.py:") and line.endswith(" in _parse") for line in lines)
    assert any(line.startswith("  /") and "json" in line and " in loads" in line for line in lines)
    assert "_jobs.py" not in trace  # the runtime's own frames are left out
    assert lines[-1].startswith("json.decoder.JSONDecodeError: Expecting property name")
    # the worker log has the same traceback under the job's line (svc logs, the console)
    platform.wait_for(lambda: f"job {job['id']}: failed after" in worker.output())
    log = worker.output()
    assert "return json.loads(text)  # fails in the stdlib" in log[log.index(f"job {job['id']}: failed after"):]


def test_input_errors_are_reported_as_input_validation_error(platform, start_worker):
    start_worker("outcome")
    raised = platform.wait_job(platform.submit("outcome", {"mode": "input"}))
    assert raised["error"]["error_type"] == "InputValidationError"
    assert raised["error"]["error_message"] == "prompt is required"
    missing = platform.wait_job(platform.submit("outcome", {"mode": "ok", "wrong": 1}))
    assert missing["error"]["error_type"] == "InputValidationError"
    assert "wrong: unknown field" in missing["error"]["error_message"]
    not_object = platform.wait_job(platform.submit("outcome", [1, 2]))
    assert not_object["error"]["error_type"] == "InputValidationError"


def test_returned_error_fails_the_job(platform, start_worker):
    start_worker("outcome")
    job = platform.wait_job(platform.submit("outcome", {"mode": "return-error"}))
    assert (job["status"], job["error"]) == ("FAILED", "nothing to do")


def test_output_that_is_not_json_fails_the_job(platform, start_worker):
    start_worker("outcome")
    job = platform.wait_job(platform.submit("outcome", {"mode": "not-json"}))
    assert job["status"] == "FAILED" and job["error"]["error_type"] == "OutputNotJSONError"


def test_nan_output_fails_the_job_instead_of_sending_non_json(platform, start_worker):
    start_worker("outcome")
    job = platform.wait_job(platform.submit("outcome", {"mode": "nan"}))
    assert job["status"] == "FAILED" and job["error"]["error_type"] == "OutputNotJSONError"
    assert "NaN and Infinity are not JSON numbers" in job["error"]["error_message"]


def test_refresh_worker_strips_the_flag_and_exits_after_the_job(platform, start_worker):
    worker = start_worker("outcome")
    job = platform.wait_job(platform.submit("outcome", {"mode": "refresh"}))
    assert job["output"] == {"ok": 1}
    assert worker.wait_exit() == 0


def test_cancel_of_running_async_job_cancels_the_task_and_reports_nothing(platform, start_worker, tmp_path):
    start_worker("aecho")
    marker = tmp_path / "cancelled"
    job_id = platform.submit("aecho", {"text": "x", "sleep": 30, "marker": str(marker)})
    platform.wait_for((tmp_path / "cancelled.started").exists)  # the task is running, not just handed out
    platform.cancel(job_id)
    platform.wait_for(marker.exists)
    # The slot is free again: the next job runs at once, and the cancelled one was never reported.
    assert platform.wait_job(platform.submit("aecho", {"text": "next"}))["status"] == "COMPLETED"
    assert platform.done_calls_for(job_id) == []


def test_cancel_of_running_sync_job_drops_its_result(platform, start_worker, tmp_path):
    worker = start_worker("echo", ping_interval=0.05)
    release = tmp_path / "release"
    job_id = platform.submit("echo", {"text": "x", "release": str(release)})
    # The heartbeat names the job once the worker runs it (a cancel before that skips the job).
    platform.wait_for(lambda: any(p["worker"] == worker.id and p["job_id"] == job_id for p in platform.pings))
    platform.cancel(job_id)
    # The cancelled function still waits for `release`; the next job runs beside it (one slot).
    assert platform.wait_job(platform.submit("echo", {"text": "next"}))["status"] == "COMPLETED"
    release.touch()
    platform.wait_for((tmp_path / "release.done").exists)  # the cancelled function has ended
    # One more job's round trip after that end: a result the runtime sent for it would be in by now.
    assert platform.wait_job(platform.submit("echo", {"text": "after"}))["status"] == "COMPLETED"
    assert platform.done_calls_for(job_id) == []


def test_cancel_that_overtakes_the_job_take_answer_skips_the_job(platform, start_worker, tmp_path):
    worker = start_worker("aecho")
    marker = tmp_path / "m"
    job_id = platform.submit("aecho", {"text": "x", "marker": str(marker)})
    platform.cancel_on_take.add(job_id)
    # The worker's next job-take after the one that handed it this job: it has dealt with the job by then.
    platform.wait_for(lambda: "taken_at_call" in platform.jobs[job_id]
                      and platform.take_calls > platform.jobs[job_id]["taken_at_call"])
    assert f"job {job_id}: cancelled before it started" in worker.output()
    assert not (tmp_path / "m.started").exists() and platform.done_calls_for(job_id) == []


def test_execution_timeout_fails_the_job_and_cancels_the_task(platform, start_worker, tmp_path):
    start_worker("aecho")
    marker = tmp_path / "cancelled"
    job = platform.wait_job(platform.submit("aecho", {"text": "x", "sleep": 30, "marker": str(marker)}, timeout_ms=300))
    assert job["status"] == "FAILED" and job["error"]["error_type"] == "ExecutionTimeoutError"
    platform.wait_for(marker.exists)


def test_stop_signal_finishes_the_running_job_then_exits_0(platform, start_worker):
    worker = start_worker("echo")
    job_id = platform.submit("echo", {"text": "last", "sleep": 0.6})
    platform.wait_running(job_id)
    platform.stop_worker(worker.id)
    assert worker.wait_exit() == 0
    assert platform.jobs[job_id]["status"] == "COMPLETED"


def test_sigterm_stops_an_idle_worker_with_exit_0(platform, start_worker):
    worker = start_worker("echo")
    platform.wait_for(lambda: any(p["worker"] == worker.id for p in platform.pings))  # it is up
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.wait_exit() == 0


def test_heartbeat_carries_the_running_job_id(platform, start_worker):
    worker = start_worker("echo", ping_interval=0.1)
    job_id = platform.submit("echo", {"text": "x", "sleep": 0.8})
    platform.wait_for(lambda: any(p["worker"] == worker.id and p["job_id"] == job_id for p in platform.pings))
    platform.wait_job(job_id)


def test_job_done_is_retried_and_take_backs_off_on_429(platform, start_worker):
    platform.take_429 = 1
    platform.fail_done = 2
    worker = start_worker("echo")
    job = platform.wait_job(platform.submit("echo", {"text": "again"}))
    assert job["status"] == "COMPLETED"
    assert len(platform.done_calls_for(job["id"])) == 3
    assert worker.proc.poll() is None


def test_concurrency_modifier_lets_one_worker_run_two_jobs(platform, start_worker, tmp_path):
    start_worker("conc")
    flag = str(tmp_path / "flag")
    first = platform.submit("conc", {"role": "a", "flag": flag})
    second = platform.submit("conc", {"role": "b", "flag": flag})
    assert platform.wait_job(first)["output"] == "saw b"
    assert platform.wait_job(second)["output"] == "b"


def test_user_module_named_like_its_handler_is_imported_not_the_handler(platform, start_worker):
    start_worker("shadow")
    job = platform.wait_job(platform.submit("shadow", {}))
    assert (job["status"], job["output"]) == ("COMPLETED", {"module": "shadow"})


def test_job_done_hands_the_next_job_so_a_busy_worker_skips_job_take(platform, start_worker):
    start_worker("echo")
    platform.wait_for(lambda: platform.take_calls >= 1)  # idle: long-polling job-take
    with platform.cond:  # queue three at once: the first goes to the poll, the others ride on job-done
        ids = [platform.submit("echo", {"text": str(i)}) for i in range(3)]
        takes = platform.take_calls
    for job_id in ids:
        assert platform.wait_job(job_id)["status"] == "COMPLETED"
    assert [platform.done_calls_for(i)[0]["take"] for i in ids] == ["1", "1", "1"]
    assert platform.take_calls - takes <= 2  # the poll that got job 1, and the next (idle) one


def test_without_done_and_take_the_worker_falls_back_to_job_take(platform, start_worker):
    platform.done_and_take = False  # an older platform ignores take=1
    start_worker("echo")
    ids = [platform.submit("echo", {"text": str(i)}) for i in range(3)]
    for job_id in ids:
        assert platform.wait_job(job_id)["status"] == "COMPLETED"


def test_refresh_worker_asks_for_no_next_job(platform, start_worker):
    worker = start_worker("outcome")
    with platform.cond:
        first = platform.submit("outcome", {"mode": "refresh"})
        second = platform.submit("outcome", {"mode": "refresh"})
    assert platform.wait_job(first)["output"] == {"ok": 1}
    assert platform.done_calls_for(first)[0]["take"] is None
    assert worker.wait_exit() == 0
    assert platform.jobs[second]["status"] == "IN_QUEUE"


def test_worker_copes_with_a_platform_that_closes_each_connection(platform, start_worker):
    platform.close_after_each = True  # kept-alive sockets closed by the server between requests
    start_worker("echo")
    ids = [platform.submit("echo", {"text": str(i)}) for i in range(5)]
    for job_id in ids:
        assert platform.wait_job(job_id)["status"] == "COMPLETED"


def test_fast_jobs_go_in_batches_of_results_and_take_several_jobs_at_once(platform, start_worker):
    platform.jobs_done = True  # the embedded platform's jobs-done route (docs/platform.md, "Hot path")
    start_worker("echo")
    platform.wait_for(lambda: platform.take_calls >= 1)
    first = platform.submit("echo", {"text": "warm"})  # the poll takes it; its result asks for more
    assert platform.wait_job(first)["status"] == "COMPLETED"
    with platform.cond:
        ids = [platform.submit("echo", {"text": str(i)}) for i in range(12)]
    for i, job_id in enumerate(ids):
        assert platform.wait_job(job_id)["output"]["echo"] == str(i)
    calls = [c for c in platform.jobs_done_calls if set(c["ids"]) & set(ids)]
    assert sorted(i for c in calls for i in c["ids"]) == sorted(ids)  # each result sent once
    assert max(len(c["ids"]) for c in calls) > 1  # several results in one request
    assert len(calls) < len(ids)
    assert not platform.done_calls  # no job-done per job


def test_a_result_the_platform_refuses_fails_its_own_job_and_the_rest_of_its_batch_completes(platform, start_worker):
    platform.jobs_done = True
    platform.refuse_echo = "refused"
    start_worker("echo")
    platform.wait_for(lambda: platform.take_calls >= 1)
    assert platform.wait_job(platform.submit("echo", {"text": "warm"}))["status"] == "COMPLETED"
    with platform.cond:  # taken together: their results go in one batch with the refused one
        ids = [platform.submit("echo", {"text": "refused" if i == 3 else str(i)}) for i in range(8)]
    jobs = [platform.wait_job(job_id) for job_id in ids]
    assert [j["status"] for j in jobs] == ["COMPLETED"] * 3 + ["FAILED"] + ["COMPLETED"] * 4
    assert jobs[3]["error"]["error_type"] == "OutputRefusedError"
    assert "nested deeper than 256 levels" in jobs[3]["error"]["error_message"]
    assert any(ids[3] in c["ids"] and len(c["ids"]) > 1 for c in platform.jobs_done_calls)  # it was in a batch


def test_a_held_result_is_sent_when_the_next_job_is_slow(platform, start_worker):
    platform.jobs_done = True
    start_worker("echo")
    platform.wait_for(lambda: platform.take_calls >= 1)
    assert platform.wait_job(platform.submit("echo", {"text": "warm"}))["status"] == "COMPLETED"
    with platform.cond:  # the waiting answer to the warm result hands all three: the fast results are held
        platform.submit("echo", {"text": "first"})
        fast = platform.submit("echo", {"text": "fast"})
        slow = platform.submit("echo", {"text": "slow", "sleep": 1.5})
    platform.wait_for(lambda: platform.jobs[fast]["status"] == "COMPLETED")
    assert platform.jobs[slow]["status"] == "IN_PROGRESS"  # sent while the slow job still runs
    assert platform.wait_job(slow)["output"]["echo"] == "slow"
    assert any(fast in c["ids"] and slow not in c["ids"] for c in platform.jobs_done_calls)  # not with the slow one


def test_an_idle_worker_gets_its_next_job_in_the_answer_to_its_last_result(platform, start_worker):
    platform.jobs_done = True
    start_worker("echo")
    platform.wait_for(lambda: platform.take_calls >= 1)
    assert platform.wait_job(platform.submit("echo", {"text": "warm"}))["status"] == "COMPLETED"
    platform.wait_for(lambda: any(c["wait"] == "1" for c in platform.jobs_done_calls))  # it waits there now
    takes = platform.take_calls
    time.sleep(0.1)
    for text in ("a", "b", "c"):
        assert platform.wait_job(platform.submit("echo", {"text": text}))["output"]["echo"] == text
    assert platform.take_calls == takes  # each job came in the answer to the previous result


def test_an_idle_stop_while_the_last_result_waits_for_a_job_finishes_no_job(platform, start_worker):
    # The idle stop comes while the last job's thread still waits in its jobs-done for the next job:
    # that job was done long ago, so there is nothing to finish (it said "finishing 1 running job(s)").
    platform.jobs_done = True
    platform.hold, platform.stop_ends_done_wait = 1.5, False  # the stop comes while that wait lasts
    worker = start_worker("echo")
    assert platform.wait_job(platform.submit("echo", {"text": "last"}))["status"] == "COMPLETED"
    platform.wait_for(lambda: any(c["wait"] == "1" for c in platform.jobs_done_calls))
    platform.stop_worker(worker.id)
    assert worker.wait_exit() == 0
    assert "stop requested: finishing 0 running job(s)" in worker.output()


def test_a_timed_out_sync_function_frees_its_slot_while_it_runs_on(platform, start_worker, tmp_path):
    worker = start_worker("echo")
    release = tmp_path / "release"
    slow = platform.submit("echo", {"text": "slow", "release": str(release)}, timeout_ms=300)
    job = platform.wait_job(slow)
    assert job["status"] == "FAILED" and job["error"]["error_type"] == "ExecutionTimeoutError"
    # The function still waits for `release` on its thread; the next job runs beside it (one slot).
    assert platform.wait_job(platform.submit("echo", {"text": "next"}))["output"]["echo"] == "next"
    assert not (tmp_path / "release.done").exists()
    release.touch()
    platform.wait_for((tmp_path / "release.done").exists)  # the slow function has ended
    # One more job's round trip after that end: a result the runtime sent for it would be in by now.
    assert platform.wait_job(platform.submit("echo", {"text": "after"}))["status"] == "COMPLETED"
    assert [c for c in platform.done_calls_for(slow) if "output" in c["body"]] == []
    assert worker.proc.poll() is None


def test_endpoint_concurrency_is_per_endpoint_not_per_module(platform, start_worker, tmp_path):
    three, one = tmp_path / "three", tmp_path / "one"
    three.mkdir()
    one.mkdir()
    start_worker("conc-three")
    start_worker("conc-one")  # the same module, no concurrency=: one job at a time
    ids = [platform.submit("conc-three", {"folder": str(three), "me": m}) for m in "abc"]
    assert [platform.wait_job(i, timeout=20)["output"] for i in ids] == [3, 3, 3]
    ids = [platform.submit("conc-one", {"folder": str(one), "me": m}) for m in "ab"]
    assert [platform.wait_job(i, timeout=20)["output"] for i in ids] == [1, 2]


def test_endpoint_concurrency_is_checked():
    from svc import Batch, Endpoint
    with pytest.raises(ValueError, match=r"concurrency must be an integer from 1 to 256 .*got 0"):
        Endpoint(name="conc-zero", concurrency=0)
    with pytest.raises(ValueError, match="concurrency does not apply to a batched endpoint"):
        Endpoint(name="conc-batched", concurrency=2, batch=Batch(max_size=4))
    with pytest.raises(ValueError, match="only a queue-based endpoint .* takes 'concurrency'"):
        Endpoint(name="conc-lb", concurrency=2).get("/x")(lambda: 1)
