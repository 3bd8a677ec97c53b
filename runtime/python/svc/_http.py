"""Minimal JSON-over-HTTP client on the standard library (the worker image has nothing else).

Connections are kept alive and reused: a small pool of idle connections per
(scheme, host, port), shared by the worker's threads (a job's result is posted from a thread
that lives only as long as the job, so a per-thread connection would not be reused). A pooled
connection the server has closed meanwhile is detected before use when possible; when a reused
connection still fails before an answer arrives (reset, broken pipe, closed without a status
line) the request is sent once more on a fresh connection. That can repeat a POST the server did
receive: job-done and job-stream are safe to repeat (the platform answers 404 for a job that is
no longer the worker's, and the runtime drops the result then).

Requests that an HTTP proxy from the environment applies to still go through urllib (one
connection per request; urllib.request is imported for the first of them: most workers never need
it); loopback calls (the embedded platform) never use a proxy. A worker of the embedded platform
sends its requests for the platform's address (SVC_API_BASE) over the Unix socket the platform names
in SVC_PLATFORM_SOCKET (`@name`: an abstract socket), which costs less than TCP loopback; the
requests themselves are the same.
"""
import json
import os
import select
import socket
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from . import _trace

if TYPE_CHECKING:
    import urllib.request

# http.client (with the email package and ssl under it: a third of what a worker imports) is
# imported only for HTTPS and urllib: the embedded platform's requests go on _PlainConnection.

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_USER_AGENT = "Python-urllib/%d.%d" % sys.version_info[:2]
_IDLE_MAX = 64  # idle connections kept per host (fanout.py's .map keeps one per slot)
_STALE = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)  # RemoteDisconnected is a ConnectionResetError
_REDIRECTS = (301, 302, 303, 307, 308)
_COME_BACK = (429, 503)  # answers whose Retry-After is kept


class TransportError(Exception):
    """The request got no HTTP answer (connection refused, reset, timed out)."""


class NotAnAnswer(Exception):
    """What the plain reader got is not an HTTP/1.x answer (its status line, as http.client's BadStatusLine)."""


def no_answer_errors() -> Tuple[type, ...]:
    """What a request that got no HTTP answer raises: OSError (refused, reset, timed out, urllib's
    URLError), NotAnAnswer, and http.client's HTTPException once HTTPS or urllib imported it."""
    client = sys.modules.get("http.client")
    return (OSError, NotAnAnswer, client.HTTPException) if client is not None else (OSError, NotAnAnswer)


@dataclass
class Response:
    status: int
    body: Any  # parsed JSON, or None when the body is empty or not JSON
    text: str
    retry_after: Optional[str] = None  # the Retry-After header of a 429 or 503 (_pacing.py reads it)


_Key = Tuple[str, str, int]
_idle: Dict[_Key, List[Any]] = {}  # _PlainConnection, or http.client's for HTTPS
_idle_lock = threading.Lock()
_proxied: Dict[_Key, bool] = {}
# A pooled connection given back (`svc_checked_in`) within _FRESH_S is reused without the
# readability check (a syscall per request): servers close idle connections after many seconds,
# and a reused connection that fails anyway is retried once on a fresh one.
_FRESH_S = 1.0


def _is_loopback(host: str) -> bool:
    return host in _LOOPBACK or host.endswith(".localhost")


def _uses_proxy(key: _Key, host: str) -> bool:
    known = _proxied.get(key)
    if known is None:
        scheme = key[0]
        known = (not _is_loopback(host) and scheme in _from_env().proxies()
                 and not _proxy_bypass(f"{host}:{key[2]}" if key[2] else host))
        _proxied[key] = known
    return known


def _checkout(key: _Key) -> Any:
    with _idle_lock:
        conns = _idle.get(key)
        conn = conns.pop() if conns else None
    if conn is not None and conn.sock is not None and time.monotonic() - getattr(conn, "svc_checked_in", 0.0) > _FRESH_S:
        # An idle socket that is readable was closed by the server (EOF) or holds junk: drop it.
        try:
            readable = select.select([conn.sock], [], [], 0)[0]
        except (OSError, ValueError):
            readable = [conn.sock]
        if readable:
            conn.close()
    return conn


def _checkin(key: _Key, conn: Any) -> None:
    with _idle_lock:
        conns = _idle.setdefault(key, [])
        if len(conns) < _IDLE_MAX:
            conns.append(conn)
            conn.svc_checked_in = time.monotonic()
            return
    conn.close()


class _Answer:
    """What `_send` reads of an answer (the part of http.client's HTTPResponse it uses)."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: Dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def read(self) -> bytes:
        return self.body

    def getheader(self, name: str) -> Optional[str]:
        return self.headers.get(name.lower())


class _PlainConnection:
    """Plain HTTP/1.1 over TCP, or to the embedded platform over its Unix socket.

    A kept-alive socket with one write per request and a plain reader of the answer (status line,
    headers, a Content-Length or chunked body): about a third of http.client's CPU per request,
    which a worker spends on every job and `.map` on every item. Over the Unix socket, host and
    targets stay those of the platform's TCP address. HTTPS stays http.client's.
    """

    # An abstract name (`@name`) as Node 20 binds it: padded with NULs to the full sun_path (108
    # bytes); newer runtimes bind it unpadded. The form that answered is kept.
    abstract_forms: Dict[str, str] = {}

    def __init__(self, host: str, port: Optional[int], path: Optional[str], timeout: float) -> None:
        self.host_header = f"{host}:{port}" if port else host
        self.address = (host, port or 80)
        self.unix_path = path
        self.timeout = timeout
        self.sock: Optional[socket.socket] = None
        self._buf = b""
        self._method = "GET"

    def _candidates(self) -> List[str]:
        path = self.unix_path
        assert path is not None
        if not path.startswith("@"):
            return [path]
        known = self.abstract_forms.get(path)
        name = "\0" + path[1:]
        return [known] if known else [name.ljust(108, "\0"), name]

    def connect(self) -> None:
        if self.unix_path is None:
            sock = socket.create_connection(self.address, self.timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sock = sock
            return
        candidates = self._candidates()
        for i, address in enumerate(candidates):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            try:
                sock.connect(address)
            except OSError:
                sock.close()
                if i == len(candidates) - 1:
                    raise
                continue
            self.abstract_forms[self.unix_path] = address
            self.sock = sock
            return

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self._buf = b""

    def request(self, method: str, target: str, body: Optional[bytes] = None, headers: Optional[Dict[str, str]] = None) -> None:
        if self.sock is None:
            self.connect()
        self._method = method
        assert self.sock is not None
        self.sock.sendall(encode_request(method, target, self.host_header, headers or {}, body))

    def _recv(self) -> bytes:
        assert self.sock is not None
        return self.sock.recv(65536)

    def getresponse(self) -> _Answer:
        first = True
        while True:
            parsed = parse_answer(self._buf, self._method)
            if parsed is not None:
                answer, used = parsed
                self._buf = self._buf[used:]
                break
            chunk = self._recv()
            if not chunk:  # a ConnectionResetError: _send sends once more on a fresh connection
                if not self._buf:
                    raise ConnectionResetError("the platform closed the connection" + (" without an answer" if first else ""))
                answer, _ = parse_answer(self._buf, self._method, eof=True) or (None, 0)
                if answer is None:
                    raise ConnectionResetError("the platform closed the connection in the middle of an answer")
                self._buf = b""
                break
            first = False
            self._buf += chunk
        if answer.headers.get("connection", "").lower() == "close":
            self.close()
        return answer


def encode_request(method: str, target: str, host_header: str, headers: Dict[str, str], body: Optional[bytes]) -> bytes:
    """One HTTP/1.1 request, head and body, as it goes on the wire."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host_header}"]
    lines.extend(f"{k}: {v}" for k, v in headers.items())
    if body is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body) if body else 0}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + body if body else head


def _chunked_body(buf: bytes, at: int) -> Optional[Tuple[bytes, int]]:
    pieces = []
    while True:
        line_end = buf.find(b"\r\n", at)
        if line_end < 0:
            return None
        size = int(buf[at:line_end].split(b";")[0], 16)
        at = line_end + 2
        if size == 0:
            end = buf.find(b"\r\n\r\n", at - 2)  # trailers, then the empty line
            return (b"".join(pieces), end + 4) if end >= 0 else None
        if len(buf) < at + size + 2:
            return None
        pieces.append(buf[at:at + size])
        at += size + 2


def parse_answer(buf: bytes, method: str, eof: bool = False) -> Optional[Tuple[_Answer, int]]:
    """The first whole answer in `buf` and the bytes it took; None while it is incomplete.

    `eof`: the connection has ended, so a body without a length ends here. Logic only: the blocking
    connection above and `.map`'s lane (_map_lanes.py) read the bytes.
    """
    head_end = buf.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    head = buf[:head_end].decode("latin-1").split("\r\n")
    parts = head[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise NotAnAnswer(head[0])
    status = int(parts[1])
    headers: Dict[str, str] = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    at = head_end + 4
    if method == "HEAD" or status in (204, 304) or status < 200:
        return _Answer(status, headers, b""), at
    if "content-length" in headers:
        end = at + int(headers["content-length"])
        return (_Answer(status, headers, buf[at:end]), end) if len(buf) >= end else None
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunked = _chunked_body(buf, at)
        return (_Answer(status, headers, chunked[0]), chunked[1]) if chunked else None
    if not eof:  # ends with the connection
        return None
    headers["connection"] = "close"
    return _Answer(status, headers, buf[at:]), len(buf)


def _platform_socket(environ=os.environ) -> Dict[_Key, str]:
    path, base = environ.get("SVC_PLATFORM_SOCKET"), environ.get("SVC_API_BASE")
    if not path or not base:
        return {}
    parts = urllib.parse.urlsplit(base)
    return {(parts.scheme, parts.hostname or "", parts.port or 0): path}


class _Environment:
    """What the environment says about reaching hosts: the platform's socket, and the proxies (with an
    opener using them) once a request leaves loopback.

    Read at the first request, not at import: a warm spare imports the runtime before it is told its
    worker's environment (platform/workers/backends/spare-bootstrap.ts).
    """

    def __init__(self) -> None:
        self.unix = _platform_socket()
        self._with_proxies: "Optional[Tuple[Dict[str, str], urllib.request.OpenerDirector]]" = None
        self._direct: "Optional[urllib.request.OpenerDirector]" = None

    def _proxy_setup(self) -> "Tuple[Dict[str, str], urllib.request.OpenerDirector]":
        if self._with_proxies is None:
            import urllib.request

            opener = urllib.request.build_opener()
            self._with_proxies = (urllib.request.getproxies(), opener)  # what the opener's ProxyHandler read
        return self._with_proxies

    def proxies(self) -> Dict[str, str]:
        return self._proxy_setup()[0]

    def opener(self) -> "urllib.request.OpenerDirector":
        return self._proxy_setup()[1]

    def direct(self) -> "urllib.request.OpenerDirector":
        """An opener that never uses a proxy: loopback calls (the embedded platform) must not."""
        if self._direct is None:
            import urllib.request

            self._direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        return self._direct


def _proxy_bypass(host: str) -> bool:
    import urllib.request

    return bool(urllib.request.proxy_bypass(host))


_environment: Optional[_Environment] = None


def _from_env() -> _Environment:
    global _environment
    if _environment is None:
        _environment = _Environment()
    return _environment


def _new_connection(key: _Key, timeout: float) -> Any:
    scheme, host, port = key
    if scheme == "https":
        import http.client

        return http.client.HTTPSConnection(host, port or None, timeout=timeout)
    return _PlainConnection(host, port or None, _from_env().unix.get(key), timeout)


def _send(key: _Key, method: str, target: str, data: Optional[bytes], headers: Dict[str, str],
          timeout: float) -> Tuple[int, bytes, Optional[str], Optional[str]]:
    """One request on a pooled connection; answers (status, body, Location header, Retry-After header)."""
    conn = _checkout(key)
    for attempt in (0, 1):
        reused = conn is not None and conn.sock is not None
        if conn is None:
            conn = _new_connection(key, timeout)
        conn.timeout = timeout
        if conn.sock is not None and conn.sock.gettimeout() != timeout:  # each change is a syscall
            conn.sock.settimeout(timeout)
        try:
            conn.request(method, target, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        except _STALE:
            conn.close()
            if reused and attempt == 0:  # the server closed the kept-alive connection: once more, fresh
                conn = None
                continue
            raise
        except BaseException:
            conn.close()  # state unknown (timeout, interrupted read): never reuse it
            raise
        location = resp.getheader("Location") if resp.status in _REDIRECTS else None
        retry_after = retry_after_of(resp)
        _checkin(key, conn)  # after a `Connection: close` answer http.client has closed it: reconnects next time
        return resp.status, raw, location, retry_after
    raise AssertionError("unreachable")


def _urllib(method: str, url: str, data: Optional[bytes], headers: Dict[str, str], timeout: float,
            opener: "urllib.request.OpenerDirector") -> Tuple[int, bytes, Optional[str]]:
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with opener.open(req, timeout=timeout) as resp:
            return resp.status, resp.read(), None
    except urllib.error.HTTPError as err:
        return err.code, err.read(), err.headers.get("Retry-After") if err.code in _COME_BACK else None


def request(method: str, url: str, body: Any = None, *, token: Optional[str] = None, timeout: float = 30,
            data: Optional[bytes] = None, content_type: str = "application/json") -> Response:
    """Send one request; HTTP error statuses come back as a Response, not as an exception."""
    if body is not None:
        data = json.dumps(body, allow_nan=False).encode("utf-8")  # NaN/Infinity are not JSON: ValueError
    headers = request_headers(token, data is not None, content_type)
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        key: _Key = (parts.scheme, host, parts.port or 0)
        if parts.scheme not in ("http", "https") or _uses_proxy(key, host):
            status, raw, retry_after = _urllib(method, url, data, headers, timeout, _from_env().opener())
        else:
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            status, raw, location, retry_after = _send(key, method, target, data, headers, timeout)
            if location is not None:  # rare: let urllib follow redirects as it always did
                opener = _from_env().direct() if _is_loopback(host) else _from_env().opener()
                status, raw, retry_after = _urllib(method, url, data, headers, timeout, opener)
    except no_answer_errors() as err:
        # includes socket timeouts, resets, refused connections and malformed answers
        raise TransportError(f"{method} {url}: {getattr(err, 'reason', None) or err!r}") from err
    return response_of(status, raw, retry_after)


def request_headers(token: Optional[str], has_body: bool, content_type: str = "application/json") -> Dict[str, str]:
    """The headers every request carries (and a traced job's `traceparent`, docs/observability.md)."""
    headers: Dict[str, str] = {"Accept": "application/json", "User-Agent": _USER_AGENT}
    _trace.add_header(headers)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if has_body:
        headers["Content-Type"] = content_type
    return headers


def response_of(status: int, raw: bytes, retry_after: Optional[str]) -> Response:
    text = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(text) if text.strip() else None
    except ValueError:
        parsed = None
    return Response(status, parsed, text, retry_after)


def retry_after_of(answer: _Answer) -> Optional[str]:
    return answer.getheader("Retry-After") if answer.status in _COME_BACK else None


def plain_route(url: str) -> Optional[Tuple[_Key, str]]:
    """(pool key, request target) when `url` is sent on a plain connection (http, no proxy); else None."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    key: _Key = (parts.scheme, host, parts.port or 0)
    if parts.scheme != "http" or _uses_proxy(key, host):
        return None
    return key, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def open_plain(key: _Key, timeout: float) -> "_PlainConnection":
    """A connected plain connection for `key` (from `plain_route`), not from the pool."""
    conn = _PlainConnection(key[1], key[2] or None, _from_env().unix.get(key), timeout)
    conn.connect()
    return conn


def request_with_retries(method: str, url: str, body: Any = None, *, token: Optional[str] = None,
                         retries: int = 3, backoff: float = 0.25, timeout: float = 30,
                         data: Optional[bytes] = None, content_type: str = "application/json") -> Response:
    """Retry on connection errors, 429 and 5xx with doubling waits; other answers are final."""
    for attempt in range(retries + 1):
        last = attempt == retries
        try:
            resp = request(method, url, body, token=token, timeout=timeout, data=data, content_type=content_type)
        except TransportError:
            if last:
                raise
        else:
            if last or not (resp.status == 429 or resp.status >= 500):
                return resp
        time.sleep(backoff * (2 ** attempt))
    raise AssertionError("unreachable")
