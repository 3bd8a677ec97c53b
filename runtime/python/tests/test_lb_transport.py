"""The LB worker's transport (svc/_lb_transport.py) under a hostile client: held connections cost no
thread, a slow or idle one is closed, requests past the pool and its queue get 503 at once, and
requests it cannot read are refused with a status, while a normal request still answers."""
import json
import socket
import threading
import time

import pytest

from svc._lb_transport import MAX_HEADER_BYTES, HttpTransport, tcp_listener


@pytest.fixture
def serve():
    started = []

    def start(handle=None, **limits):
        handle = handle or (lambda method, path, body: (200, json.dumps({"path": path, "body": body.decode()}).encode()))
        server = HttpTransport(handle, lambda *_: None, tcp_listener("127.0.0.1", 0), **limits)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.shutdown()
        server.server_close()
    _readers.clear()


def connect(server):
    return socket.create_connection(server.server_address, timeout=10)


def request(server, path="/x", body=b"", sock=None):
    own = sock is None
    sock = sock or connect(server)
    try:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        return read_answer(sock)
    finally:
        if own:
            sock.close()


_readers = {}


def read_answer(sock):
    """One answer's status and JSON body (a buffered reader per socket: a second pipelined answer stays for the next call)."""
    reader = _readers.setdefault(sock.fileno(), sock.makefile("rb"))
    line = reader.readline()
    if not line:
        return None, None
    length = 0
    while True:
        header = reader.readline()
        if header in (b"\r\n", b""):
            break
        name, _, value = header.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return int(line.split(b" ")[1]), json.loads(reader.read(length))


def test_held_connections_cost_no_thread_and_others_are_answered(serve):
    server = serve(threads=4)
    before = threading.active_count()
    held = [connect(server) for _ in range(500)]
    for sock in held[:250]:
        sock.sendall(b"POST /slow HTTP/1.1\r\nContent-Le")  # half a request
    start = time.monotonic()
    assert request(server, "/fine", b"hi") == (200, {"path": "/fine", "body": "hi"})
    assert time.monotonic() - start < 2
    assert threading.active_count() <= before + 4  # the pool's threads at most, whatever is held
    for sock in held:
        sock.close()


def test_a_slow_request_is_closed_with_408_and_an_idle_connection_is_closed(serve):
    server = serve(request_timeout_s=0.5, idle_timeout_s=0.5)
    slow = connect(server)
    slow.sendall(b"POST /slow HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")
    assert read_answer(slow)[0] == 408
    idle = connect(server)
    assert request(server, "/a", sock=idle)[0] == 200  # kept alive...
    time.sleep(1.2)
    assert idle.recv(1) == b""  # ...then closed once idle
    slow.close()
    idle.close()


def test_requests_past_the_pool_and_its_queue_get_503_at_once(serve):
    release = threading.Event()

    def handle(method, path, body):
        release.wait(10)
        return 200, b"{}"

    server = serve(handle, threads=2, queued=1)
    socks = [connect(server) for _ in range(4)]
    for sock in socks[:3]:
        sock.sendall(b"GET /wait HTTP/1.1\r\n\r\n")
    time.sleep(0.3)
    start = time.monotonic()
    status, body = request(server, "/more", sock=socks[3])
    assert status == 503 and "busy" in body["error"]
    assert time.monotonic() - start < 1
    release.set()
    assert [read_answer(sock)[0] for sock in socks[:3]] == [200, 200, 200]
    for sock in socks:
        sock.close()


def test_what_cannot_be_read_is_refused_with_a_status(serve):
    server = serve()
    big = connect(server)
    big.sendall(b"GET / HTTP/1.1\r\nX-Big: " + b"a" * (MAX_HEADER_BYTES + 10))
    assert read_answer(big)[0] == 431
    chunked = connect(server)
    chunked.sendall(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
    assert read_answer(chunked)[0] == 411
    bad = connect(server)
    bad.sendall(b"NONSENSE\r\n\r\n")
    assert read_answer(bad)[0] == 400
    for sock in (big, chunked, bad):
        sock.close()


def test_keep_alive_and_pipelined_requests_are_answered_in_order(serve):
    server = serve()
    sock = connect(server)
    sock.sendall(b"POST /one HTTP/1.1\r\nContent-Length: 1\r\n\r\n1POST /two HTTP/1.1\r\nContent-Length: 1\r\n\r\n2")
    assert read_answer(sock) == (200, {"path": "/one", "body": "1"})
    assert read_answer(sock) == (200, {"path": "/two", "body": "2"})
    sock.close()
