"""Minimal JSON-over-HTTP client on urllib (the worker image has nothing else)."""
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Dict, Optional

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
# Loopback calls (the embedded platform) must never go through an HTTP proxy from the environment.
_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_default = urllib.request.build_opener()


class TransportError(Exception):
    """The request got no HTTP answer (connection refused, reset, timed out)."""


@dataclass
class Response:
    status: int
    body: Any  # parsed JSON, or None when the body is empty or not JSON
    text: str


def _opener(url: str) -> urllib.request.OpenerDirector:
    host = urllib.parse.urlsplit(url).hostname or ""
    return _direct if host in _LOOPBACK or host.endswith(".localhost") else _default


def request(method: str, url: str, body: Any = None, *, token: Optional[str] = None, timeout: float = 30,
            data: Optional[bytes] = None, content_type: str = "application/json") -> Response:
    """Send one request; HTTP error statuses come back as a Response, not as an exception."""
    headers: Dict[str, str] = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if body is not None:
        data = json.dumps(body).encode("utf-8")
    if data is not None:
        headers["Content-Type"] = content_type
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with _opener(url).open(req, timeout=timeout) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    except (urllib.error.URLError, OSError) as err:  # includes socket timeouts and resets
        raise TransportError(f"{method} {url}: {getattr(err, 'reason', err)}") from err
    text = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(text) if text.strip() else None
    except ValueError:
        parsed = None
    return Response(status, parsed, text)


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
