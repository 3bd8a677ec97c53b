"""`.map`'s fast lane (_map_lanes.FastLane) against a real loopback HTTP/1.1 server playing an endpoint's /runsync:
final answers settle on the caller's thread, a job still running is followed by /status (never sent twice), a 429
pauses the endpoint and is sent again, a failed job is the item's, and kept-alive connections the server drops are
replaced."""
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict

import pytest

from svc import _http, remote
from svc.errors import RemoteCallError
from svc.fanout import map_calls


def double(x: int = 0):
    return 2 * x


class _Endpoint(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script) -> None:
        self.script = script  # x -> what /runsync answers for it
        self.posts: Counter = Counter()
        self.statuses: Counter = Counter()
        self.peers: set = set()
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # kept alive, as the platform's
    server: _Endpoint

    def _answer(self, status: int, body: Dict[str, Any], headers: Dict[str, str] = {}) -> None:  # noqa: B006
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 - the http.server spelling
        x = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]["x"]
        with self.server.lock:
            self.server.posts[x] += 1
            self.server.peers.add(self.client_address)
            times = self.server.posts[x]
        kind = self.server.script(x)
        if kind == "limited" and times == 1:
            return self._answer(429, {"error": "over the limit"}, {"Retry-After": "0.2"})
        if kind == "running":
            return self._answer(200, {"id": f"job-{x}", "status": "IN_PROGRESS"})
        if kind == "failed":
            return self._answer(200, {"id": f"job-{x}", "status": "FAILED", "error": {"error_type": "ValueError", "error_message": f"{x} is cursed"}})
        self.close_connection = kind == "drop"  # closes the kept-alive connection after answering, unannounced
        self._answer(200, {"id": f"job-{x}", "status": "COMPLETED", "output": 2 * x})

    def do_GET(self) -> None:  # noqa: N802
        x = int(self.path.rsplit("-", 1)[1])
        with self.server.lock:
            self.server.statuses[x] += 1
        self._answer(200, {"id": f"job-{x}", "status": "COMPLETED", "output": 2 * x})

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def endpoint(monkeypatch):
    monkeypatch.setenv("PLATFORM_API_KEY", "k")
    servers = []

    def start(script):
        server = _Endpoint(script)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        url = f"http://127.0.0.1:{server.server_address[1]}/v2/ep"
        lane = remote.RunsyncLane("double", "ep", url, *_http.plain_route(f"{url}/runsync"))
        return server, lane
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _map(lane, n, concurrency=8):
    return list(map_calls(double, lambda payload: lane.carry_on(payload, None), range(n), concurrency, True, fast=lambda: lane))


def test_final_answers_settle_on_the_callers_thread_over_at_most_concurrency_connections(endpoint):
    server, lane = endpoint(lambda x: "done")
    seen_threads = []
    results = []
    for value in map_calls(double, lambda payload: pytest.fail("no call should need a thread"), range(300), 8, False, fast=lambda: lane):
        seen_threads.append(sum(1 for t in threading.enumerate() if t.name.startswith("svc-map")))
        results.append(value)
    assert results == [2 * x for x in range(300)]
    assert max(seen_threads) == 0
    assert set(server.posts.values()) == {1} and len(server.peers) <= 8


def test_a_running_job_is_followed_a_429_is_sent_again_and_a_failed_job_is_the_items(endpoint):
    kinds = {3: "running", 4: "limited", 5: "failed", 17: "running", 18: "limited"}
    server, lane = endpoint(lambda x: kinds.get(x, "done"))
    out = _map(lane, 40)
    assert [v for i, v in enumerate(out) if i != 5] == [2 * x for x in range(40) if x != 5]
    assert isinstance(out[5], RemoteCallError) and out[5].error_type == "ValueError" and out[5].index == 5
    assert "5 is cursed" in str(out[5])
    assert server.posts[3] == server.posts[17] == 1  # followed by /status, never run twice
    assert server.statuses[3] >= 1 and server.statuses[17] >= 1
    assert server.posts[4] == server.posts[18] == 2  # refused once, then sent again
    assert all(server.posts[x] == 1 for x in range(40) if x not in (4, 18))


def test_kept_alive_connections_the_server_drops_are_replaced_without_failing_an_item(endpoint):
    server, lane = endpoint(lambda x: "drop" if x % 3 == 0 else "done")
    assert _map(lane, 120, concurrency=4) == [2 * x for x in range(120)]
    assert all(server.posts[x] == 1 for x in range(120))


def test_an_endpoint_that_cannot_be_reached_fails_each_item_by_name():
    lane = remote.RunsyncLane("double", "ep", "http://127.0.0.1:9/v2/ep", *_http.plain_route("http://127.0.0.1:9/v2/ep/runsync"))
    out = list(map_calls(double, lambda payload: (_ for _ in ()).throw(RemoteCallError("unreachable", status="unreachable")),
                         range(3), 2, True, fast=lambda: lane))
    assert [type(v) for v in out] == [RemoteCallError] * 3 and [v.index for v in out] == [0, 1, 2]


def test_an_answer_that_is_not_http_fails_its_item_and_the_map_goes_on(monkeypatch):
    monkeypatch.setenv("PLATFORM_API_KEY", "k")
    import socket as _socket
    listener = _socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.sendall(b"garbage\r\n\r\n")
            conn.close()
    threading.Thread(target=serve, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v2/ep"
    lane = remote.RunsyncLane("double", "ep", url, *_http.plain_route(f"{url}/runsync"))
    try:
        out = list(map_calls(double, lambda payload: pytest.fail("not resent"), range(3), 2, True, fast=lambda: lane))
    finally:
        listener.close()
    assert [type(v) for v in out] == [RemoteCallError] * 3 and all("not HTTP" in str(v) for v in out)
