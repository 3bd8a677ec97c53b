"""The runtime's HTTP client: kept-alive connections, reconnect on a connection the server closed,
retries of a busy or failing server's answers."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, List

import pytest

from svc import _http


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        server: Any = self.server
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        server.peers.append(self.client_address[1])
        data = b'{"ok": true}'
        self.send_response(server.statuses.pop(0) if server.statuses else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        if server.close_after_each:
            self.close_connection = True  # without `Connection: close`: the client learns it later

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server():
    srv: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.peers: List[int] = []
    srv.close_after_each = False
    srv.statuses: List[int] = []
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}/x"
    yield srv
    srv.shutdown()
    srv.server_close()


def test_requests_reuse_one_kept_alive_connection(server):
    for _ in range(3):
        resp = _http.request("POST", server.url, {"a": 1})
        assert (resp.status, resp.body) == (200, {"ok": True})
    assert len(set(server.peers)) == 1


def test_a_connection_the_server_closed_is_replaced(server):
    server.close_after_each = True
    for _ in range(3):
        assert _http.request("GET", server.url).status == 200
    assert len(set(server.peers)) == 3


def test_a_stale_connection_not_seen_before_use_is_retried_once_on_a_fresh_one(server, monkeypatch):
    server.close_after_each = True
    assert _http.request("GET", server.url).status == 200
    # Make the pre-use check miss the close, as when the server closes just after it.
    monkeypatch.setattr(_http.select, "select", lambda r, w, x, t: ([], [], []))
    assert _http.request("POST", server.url, {"n": 2}).status == 200
    assert len(server.peers) == 2 and len(set(server.peers)) == 2


def test_no_answer_is_a_transport_error():
    with pytest.raises(_http.TransportError):
        _http.request("GET", "http://127.0.0.1:9/nothing-listens-here", timeout=2)


def test_a_5xx_answer_is_retried_and_a_4xx_answer_is_final(server):
    server.statuses = [503, 429]
    assert _http.request_with_retries("POST", server.url, {"a": 1}, backoff=0.01).status == 200
    assert len(server.peers) == 3
    server.statuses = [404]
    assert _http.request_with_retries("POST", server.url, {"a": 1}, backoff=0.01).status == 404
    assert len(server.peers) == 4


def test_a_host_a_proxy_from_the_environment_applies_to_goes_through_it(server, monkeypatch):
    # urllib.request is imported for it at the first such request, not at the runtime's import
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setattr(_http, "_environment", None)
    monkeypatch.setattr(_http, "_proxied", {})
    seen: List[str] = []
    monkeypatch.setattr(_Handler, "log_request", lambda self, *a: seen.append(self.requestline), raising=False)
    assert _http.request("POST", "http://svc-proxied.example/jobs", {"a": 1}).body == {"ok": True}
    assert seen == ["POST http://svc-proxied.example/jobs HTTP/1.1"]
    # loopback never goes through it
    assert _http.request("GET", server.url).status == 200
    assert seen[1:] == ["GET /x HTTP/1.1"]
