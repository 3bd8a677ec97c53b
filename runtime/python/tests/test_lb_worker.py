"""Load-balanced workers end to end: the HTTP server of `serve()` in a subprocess."""
import json
import urllib.error
import urllib.request

import pytest


def call(worker, method, path, body=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(f"http://127.0.0.1:{worker.port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@pytest.fixture
def api(start_worker):
    return start_worker("api")


def test_ping(api):
    assert call(api, "GET", "/ping") == (200, {"status": "healthy"})


def test_health_checks_are_not_logged_but_routes_are(api):
    for _ in range(3):
        call(api, "GET", "/ping")
    call(api, "POST", "/add", {"a": 1, "b": 2})
    log = api.output()
    assert '"POST /add HTTP/1.1" 200' in log
    assert "GET /ping" not in log


def test_get_takes_query_parameters_converted_by_annotation(api):
    assert call(api, "GET", "/item?id=7&verbose=true&tag=x") == (200, {"id": 7, "verbose": True, "tag": "x"})
    status, body = call(api, "GET", "/item?id=seven")
    assert status == 400 and body["error_type"] == "InputValidationError"


def test_delete_takes_query_parameters(api):
    assert call(api, "DELETE", "/item?id=3") == (200, {"removed": 3})


def test_post_takes_json_body_as_keyword_arguments(api):
    assert call(api, "POST", "/add", {"a": 2, "b": 3}) == (200, 5)


def test_async_route_runs_on_the_loop(api):
    assert call(api, "POST", "/shout", {"text": "hey"}) == (200, "HEY!")


def test_unknown_route_is_404_and_wrong_method_405(api):
    status, body = call(api, "GET", "/nope")
    assert status == 404 and "no route GET /nope" in body["error"]
    assert call(api, "GET", "/add")[0] == 405


def test_bad_json_is_400_with_json_error(api):
    status, body = call(api, "POST", "/add", raw=b"{not json")
    assert status == 400 and "invalid JSON body" in body["error"]


def test_missing_argument_and_input_validation_error_are_400(api):
    status, body = call(api, "POST", "/add", {"a": 1})
    assert status == 400 and "b: expected int (required), got nothing" in body["error"]
    status, body = call(api, "POST", "/add", {"a": 1, "b": "2"})
    assert status == 400 and body["error_type"] == "InputValidationError" and "b: expected int, got \"2\" (string)" in body["error_message"]
    status, body = call(api, "POST", "/picky", {"n": -1})
    assert (status, body["error_type"], body["error_message"]) == (400, "InputValidationError", "n must be >= 0")


def test_exception_is_500_and_the_server_keeps_serving(api):
    status, body = call(api, "POST", "/boom", {})
    assert (status, body["error_type"], body["error_message"]) == (500, "RuntimeError", "kaboom")
    assert call(api, "GET", "/ping")[0] == 200
    assert "kaboom" in api.output()  # the traceback goes to the worker log


def test_execute_runs_a_function_by_name(api):
    assert call(api, "POST", "/execute", {"function": "add", "input": {"a": 1, "b": 1}}) == (200, {"output": 2})
    assert call(api, "POST", "/execute", {"function": "shout", "input": {"text": "a"}}) == (200, {"output": "A!"})
    assert call(api, "POST", "/execute", {"function": "nope", "input": {}})[0] == 404
    assert call(api, "POST", "/execute", [1])[0] == 400


def test_stop_signal_shuts_the_server_down_with_exit_0(platform, api):
    platform.stop_worker(api.id)
    assert api.wait_exit() == 0
