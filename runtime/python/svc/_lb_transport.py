"""The load-balanced worker's HTTP/1.1 transport: one selector thread holds every connection, and
only a complete request reaches a thread, from a bounded pool.

A held connection (idle keep-alive, or a client sending its request slowly) costs a socket and a
buffer, never a thread: the stdlib's ThreadingHTTPServer gave each one a thread (1,000 slow
connections made 1,546 threads) behind a listen backlog of 5, with no timeout. Here:

- the listen backlog is LISTEN_BACKLOG;
- at most `threads` requests run at once and `queued` more wait for a thread; past that a request
  is answered 503 at once (the platform's proxy sees an overloaded worker, not a hang);
- a connection idle for `idle_timeout_s` between requests, or whose request has not arrived
  whole `request_timeout_s` after its first byte, is closed;
- headers are at most MAX_HEADER_BYTES (431 past it) and a body at most MAX_BODY_BYTES (413);
  a body needs a Content-Length (411), which the platform's proxy always sends.

What a request means is the caller's `handle(method, path, body) -> (status, bytes)`
(./_lb_server.py); this module only moves bytes.
"""
import contextlib
import json
import os
import selectors
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import Callable, Dict, List, Optional, Tuple

LISTEN_BACKLOG = 1024
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 100 * 1024 * 1024
READ_CHUNK = 256 * 1024

Handle = Callable[[str, str, bytes], Tuple[int, bytes]]
# (client address, request path, request line or why it was refused, status)
LogRequest = Callable[[str, str, str, int], None]


class _Conn:
    __slots__ = ("sock", "address", "buf", "last", "started")

    def __init__(self, sock: socket.socket, address: str) -> None:
        self.sock = sock
        self.address = address
        self.buf = bytearray()
        self.last = time.monotonic()  # last activity: the idle timeout counts from it
        self.started: Optional[float] = None  # first byte of the request being read


class _Request:
    __slots__ = ("method", "path", "line", "body", "keep_alive")

    def __init__(self, method: str, path: str, line: str, body: bytes, keep_alive: bool) -> None:
        self.method, self.path, self.line, self.body, self.keep_alive = method, path, line, body, keep_alive


class _Refusal(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _parse_head(head: bytes) -> Tuple[str, str, str, Dict[str, str], bool]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _Refusal(400, f"bad request line {lines[0][:100]!r}")
    headers: Dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise _Refusal(400, f"bad header line {line[:100]!r}")
        headers[name.strip().lower()] = value.strip()
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if parts[2] == "HTTP/1.1" else connection == "keep-alive"
    return parts[0], parts[1], lines[0], headers, keep_alive


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _response(status: int, body: bytes, keep_alive: bool) -> bytes:
    reason = _reason(status)
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n")
    return head.encode("latin-1") + body


def _error_body(message: str) -> bytes:
    return json.dumps({"error": message}).encode("utf-8")


def tcp_listener(host: str, port: int) -> socket.socket:
    return socket.create_server((host, port), backlog=LISTEN_BACKLOG)


def unix_listener(path: str) -> socket.socket:
    """A Unix socket at `path` (a previous worker's is replaced: the folder is this worker's alone)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(LISTEN_BACKLOG)
    return listener


class HttpTransport:
    def __init__(self, handle: Handle, log_request: LogRequest, listener: socket.socket, *, threads: int = 32,
                 queued: int = 256, idle_timeout_s: float = 60.0, request_timeout_s: float = 30.0) -> None:
        self.handle, self.log_request = handle, log_request
        self.threads, self.queued = threads, queued
        self.idle_timeout_s, self.request_timeout_s = idle_timeout_s, request_timeout_s
        self.listener = listener
        self.listener.setblocking(False)
        self.server_address = self.listener.getsockname()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, None)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self.selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="svc-lb")
        self._lock = threading.Lock()
        self._back: List[_Conn] = []  # connections whose request was answered: read again (selector thread)
        self._reading: Dict[int, _Conn] = {}  # fd -> connection held by the selector
        self._in_pool = 0
        self._stop = threading.Event()
        self._stopped = threading.Event()

    # -- the selector thread ---------------------------------------------------------------

    def serve_forever(self) -> None:
        try:
            while not self._stop.is_set():
                for key, _ in self.selector.select(timeout=0.5):
                    if key.data is None:
                        self._accept()
                    elif key.data == "wake":
                        self._drain_wake()
                    else:
                        self._read(key.data)
                self._take_back()
                self._sweep(time.monotonic())
        finally:
            self._stopped.set()

    def _accept(self) -> None:
        for _ in range(64):
            try:
                sock, address = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of descriptors: the connection waits in the backlog
                return
            sock.setblocking(False)
            if isinstance(address, tuple):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(sock, address[0] if isinstance(address, tuple) else "platform")  # a Unix peer has no address
            self._hold(conn)

    def _hold(self, conn: _Conn) -> None:
        self._reading[conn.sock.fileno()] = conn
        self.selector.register(conn.sock, selectors.EVENT_READ, conn)

    def _release(self, conn: _Conn) -> None:
        self._reading.pop(conn.sock.fileno(), None)
        try:
            self.selector.unregister(conn.sock)
        except (KeyError, ValueError):
            pass

    def _close(self, conn: _Conn) -> None:
        self._release(conn)
        try:
            conn.sock.close()
        except OSError:
            pass

    def _read(self, conn: _Conn) -> None:
        try:
            chunk = conn.sock.recv(READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._close(conn)
            return
        now = time.monotonic()
        conn.last = now
        if conn.started is None:
            conn.started = now
        conn.buf += chunk
        self._try_request(conn)

    def _try_request(self, conn: _Conn) -> None:
        """Hands a complete request in the buffer to the pool; refuses what cannot become one."""
        end = conn.buf.find(b"\r\n\r\n")
        if end < 0:
            if len(conn.buf) > MAX_HEADER_BYTES:
                self._refuse(conn, 431, f"request headers over {MAX_HEADER_BYTES} bytes")
            return
        try:
            method, path, line, headers, keep_alive = _parse_head(bytes(conn.buf[:end]))
            if "chunked" in headers.get("transfer-encoding", "").lower():
                raise _Refusal(411, "a request body needs a Content-Length")
            length = int(headers.get("content-length") or 0)
            if length < 0:
                raise _Refusal(400, "bad Content-Length")
            if length > MAX_BODY_BYTES:
                raise _Refusal(413, f"request body over {MAX_BODY_BYTES} bytes")
        except ValueError:
            self._refuse(conn, 400, "bad Content-Length")
            return
        except _Refusal as refusal:
            self._refuse(conn, refusal.status, str(refusal))
            return
        total = end + 4 + length
        if len(conn.buf) < total:
            return
        request = _Request(method, path, line, bytes(conn.buf[end + 4:total]), keep_alive)
        del conn.buf[:total]
        conn.started = None if not conn.buf else time.monotonic()
        with self._lock:
            busy = self._in_pool
            if busy < self.threads + self.queued:
                self._in_pool += 1
        if busy >= self.threads + self.queued:
            self._refuse(conn, 503, f"the worker is busy: {self.threads} requests running and {self.queued} waiting")
            return
        self._release(conn)
        self.pool.submit(self._serve, conn, request)

    def _refuse(self, conn: _Conn, status: int, message: str) -> None:
        """Answers an error and closes (what follows on the connection cannot be trusted)."""
        self._release(conn)
        try:
            conn.sock.setblocking(True)
            conn.sock.settimeout(5)
            conn.sock.sendall(_response(status, _error_body(message), keep_alive=False))
        except OSError:
            pass
        self.log_request(conn.address, "", f"refused: {message}", status)
        self._close(conn)

    def _take_back(self) -> None:
        with self._lock:
            back, self._back = self._back, []
        for conn in back:
            self._hold(conn)
            if conn.buf:  # a pipelined request already came
                self._try_request(conn)

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError, OSError):
            pass

    def _sweep(self, now: float) -> None:
        for conn in list(self._reading.values()):
            if conn.started is not None and now - conn.started > self.request_timeout_s:
                self._refuse(conn, 408, f"the request did not arrive whole within {self.request_timeout_s:g} s")
            elif conn.started is None and now - conn.last > self.idle_timeout_s:
                self._close(conn)

    # -- the pool's threads ------------------------------------------------------------------

    def _serve(self, conn: _Conn, request: _Request) -> None:
        keep = False
        try:
            status, body = self.handle(request.method, request.path, request.body)
            keep = request.keep_alive and not self._stop.is_set()
            self.log_request(conn.address, request.path, request.line, status)  # before the answer, as the stdlib's server
            conn.sock.setblocking(True)
            conn.sock.settimeout(self.request_timeout_s)
            conn.sock.sendall(_response(status, body, keep))
        except OSError:
            keep = False
        finally:
            with self._lock:
                self._in_pool -= 1
                if keep:
                    conn.sock.setblocking(False)
                    conn.last = time.monotonic()
                    self._back.append(conn)
            if keep:
                self._wake()
            else:
                try:
                    conn.sock.close()
                except OSError:
                    pass

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass

    # -- life cycle --------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stops serve_forever (from another thread) and waits for it to return."""
        self._stop.set()
        self._wake()
        self._stopped.wait()

    def server_close(self) -> None:
        """Closes the listener, lets requests in flight finish, then closes every connection."""
        try:
            self.selector.unregister(self.listener)
        except (KeyError, ValueError):
            pass
        self.listener.close()
        self.pool.shutdown(wait=True)
        self._take_back()
        for conn in list(self._reading.values()):
            self._close(conn)
        self.selector.close()
        self._wake_r.close()
        self._wake_w.close()
