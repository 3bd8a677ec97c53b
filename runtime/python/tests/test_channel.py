"""A sandboxed worker's channel to the platform (docs/platform.md, "Threat model"): the relay of the
platform's URL onto its Unix socket, and a load-balanced server that listens on a Unix socket."""
import os
import socket
import threading

from conftest import free_port
from svc import _relay
from svc._lb_server import UnavailableApp
from svc._lb_unix import make_unix_server


def _unix_echo_server(path: str) -> socket.socket:
    """Answers each connection with what it sent, upper-cased, once the sender half-closes."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                data = b""
                while chunk := conn.recv(65536):
                    data += chunk
                conn.sendall(data.upper())

    threading.Thread(target=serve, daemon=True).start()
    return server


def test_the_relay_copies_a_tcp_connection_to_the_unix_socket_both_ways(tmp_path):
    path = str(tmp_path / "platform.sock")
    server = _unix_echo_server(path)
    port = free_port()
    _relay.start({"SVC_PLATFORM_RELAY": f"127.0.0.1:{port}={path}"})
    payload = os.urandom(300_000).hex().encode()  # larger than one read
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(payload)
        conn.shutdown(socket.SHUT_WR)
        got = b""
        while chunk := conn.recv(65536):
            got += chunk
    server.close()
    assert got == payload.upper()


def test_a_relay_whose_port_is_taken_is_skipped_with_a_warning(tmp_path, caplog):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        _relay.start({"SVC_PLATFORM_RELAY": f"127.0.0.1:{port}={tmp_path / 'x.sock'}"})
    assert f"127.0.0.1:{port} is not relayed" in caplog.text


def test_the_lb_server_answers_on_a_unix_socket(tmp_path):
    path = str(tmp_path / "lb.sock")
    with open(path, "w"):
        pass  # a stale file where the socket goes is replaced
    server = make_unix_server(UnavailableApp({"error_type": "ImportError", "error_message": "no module x"}), path)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(10)
            conn.connect(path)
            conn.sendall(b"GET /ping HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200")
        assert b'"healthy"' in answer
    finally:
        server.shutdown()
        server.server_close()
