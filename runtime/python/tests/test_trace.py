"""A traced job's context goes with every request the job makes (docs/observability.md): the
`traceparent` the platform gave the job is sent as the W3C header by _http, in the job's own
thread and in each `.map` thread; outside a job, and after it, none is sent."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, List, Optional

import pytest

from svc import _http, _trace
from svc.fanout import map_calls

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class _Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        server: Any = self.server
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with server.lock:
            server.seen.append(self.headers.get("traceparent"))
        data = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server():
    srv: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    srv.seen, srv.lock = [], threading.Lock()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _post(srv: Any) -> None:
    _http.request("POST", f"http://127.0.0.1:{srv.server_address[1]}/x", {"a": 1})


def test_a_traced_job_sends_its_traceparent_and_nothing_else_does(server):
    _post(server)
    _trace.run_as(TRACEPARENT, lambda: _post(server))
    _post(server)
    assert server.seen == [None, TRACEPARENT, None]


def test_each_map_thread_carries_the_job_context(server):
    def work(value: int) -> int:
        return value

    def call(payload: Any) -> Optional[str]:
        _post(server)
        return _trace.current.get()

    seen: List[Optional[str]] = _trace.run_as(TRACEPARENT, lambda: list(map_calls(work, call, range(12), 4, False)))
    assert seen == [TRACEPARENT] * 12
    assert server.seen == [TRACEPARENT] * 12
