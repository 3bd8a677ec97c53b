"""_pacing.send against a real loopback server that answers 429 with Retry-After, 503 and 500."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List

import pytest

from svc import _http, _pacing


class _Limited(ThreadingHTTPServer):
    """Answers `script` (status, Retry-After) in turn, then 200 `{"n": <request number>}`."""

    daemon_threads = True

    def __init__(self, script: List[tuple]) -> None:
        self.script = list(script)
        self.seen: List[float] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Limited

    def do_POST(self) -> None:  # noqa: N802 - the http.server spelling
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.seen.append(time.monotonic())
            status, retry_after = self.server.script.pop(0) if self.server.script else (200, None)
            n = len(self.server.seen)
        body = json.dumps({"n": n} if status == 200 else {"error": "later"}).encode()
        self.send_response(status)
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def serve():
    servers: List[_Limited] = []

    def start(script):
        server = _Limited(script)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server, f"http://127.0.0.1:{server.server_address[1]}"
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _post(url):
    return lambda: _http.request("POST", url, {"input": {}})


def test_a_429_waits_for_retry_after_then_succeeds(serve):
    server, url = serve([(429, "1"), (429, "1")])
    started = time.monotonic()
    resp = _pacing.send(f"ep-{url}", _post(url))
    assert resp.status == 200 and resp.body == {"n": 3}
    assert server.seen[1] - server.seen[0] >= 1.0 and server.seen[2] - server.seen[1] >= 1.0
    assert time.monotonic() - started < 5


def test_a_429_pauses_every_call_to_that_endpoint_not_only_the_refused_one(serve):
    server, url = serve([(429, "1")])
    key = f"ep-{url}"
    first = threading.Thread(target=_pacing.send, args=(key, _post(url)))
    first.start()
    deadline = time.monotonic() + 5
    while not server.seen and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    assert _pacing.send(key, _post(url)).status == 200  # sent only after the pause the first call was told
    first.join(5)
    assert len(server.seen) == 3 and min(server.seen[1:]) - server.seen[0] >= 1.0


def test_without_retry_after_the_waits_double(serve, monkeypatch):
    monkeypatch.setattr(_pacing, "FIRST_BACKOFF_S", 0.1)
    server, url = serve([(429, None)] * 3)
    assert _pacing.send(f"ep-{url}", _post(url)).status == 200
    gaps = [b - a for a, b in zip(server.seen, server.seen[1:])]
    assert gaps[0] >= 0.1 and gaps[1] >= 0.2 and gaps[2] >= 0.4


def test_momentary_5xx_are_retried_and_a_lasting_one_becomes_the_answer(serve, monkeypatch):
    monkeypatch.setattr(_pacing, "FIRST_BACKOFF_S", 0.05)
    _, url = serve([(503, None), (502, None), (504, None)])
    assert _pacing.send(f"ep-{url}", _post(url)).status == 200
    monkeypatch.setattr(_pacing, "MOMENTARY_S", 0.3)
    _, url = serve([(503, None)] * 100)
    assert _pacing.send(f"ep-{url}", _post(url)).status == 503


def test_other_errors_are_answered_at_once(serve):
    server, url = serve([(500, None)])
    assert _pacing.send(f"ep-{url}", _post(url)).status == 500
    assert len(server.seen) == 1


def test_a_refused_connection_is_retried_but_a_post_that_may_have_arrived_is_not(serve, monkeypatch):
    monkeypatch.setattr(_pacing, "MOMENTARY_S", 0.3)
    monkeypatch.setattr(_pacing, "FIRST_BACKOFF_S", 0.05)
    server, url = serve([])
    port = server.server_address[1]
    server.shutdown()
    server.server_close()  # nothing listens there now: connections are refused
    started = time.monotonic()
    with pytest.raises(_http.TransportError):
        _pacing.send(f"ep-{url}", _post(url))
    assert time.monotonic() - started >= 0.3  # retried for MOMENTARY_S
    calls = [0]

    def reset():
        calls[0] += 1
        try:
            raise ConnectionResetError("reset by peer")
        except ConnectionResetError as err:
            raise _http.TransportError(f"POST 127.0.0.1:{port}: reset") from err
    with pytest.raises(_http.TransportError):
        _pacing.send("ep-reset", reset)
    assert calls[0] == 1


@pytest.mark.parametrize("value, expected", [("3", 3.0), ("0.5", 0.5), ("-2", 0.0), ("9999", _pacing.MAX_RETRY_AFTER_S), ("soon", None), (None, None)])
def test_retry_after_values(value, expected):
    assert _pacing.retry_after_s(value) == expected


def test_retry_after_as_an_http_date():
    now = time.time()
    from email.utils import formatdate
    assert _pacing.retry_after_s(formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30, abs=1)
