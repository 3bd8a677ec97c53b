"""The load-balanced worker's HTTP server on 127.0.0.1:$SVC_LB_PORT, or its Unix socket (./_lb_unix.py; contracts section 4).

Serves `GET /ping`, every declared route and `POST /execute`. Errors become JSON answers:
400 bad JSON or input (InputValidationError), 404 unknown path or function, 405 wrong method,
500 an exception in the app (`{"error", "error_type", "error_message"}`; the traceback goes
to the log, not to the caller). When the app's module did not import, `UnavailableApp` answers
every request but `GET /ping` with 503 and the import error (docs/platform.md). The HTTP plumbing
(a selector front end, a bounded pool of threads, timeouts) is ./_lb_transport.py.
"""
import inspect
import json
import os
import socket
import traceback
import urllib.parse
from typing import Any, Callable, Dict, Optional, Tuple

from ._call import kwargs_for, query_kwargs
from ._lb_transport import HttpTransport, tcp_listener
from ._log import logger
from ._loop import LoopThread
from .endpoint import Endpoint, Route
from .errors import is_input_error

BODY_METHODS = ("POST", "PUT", "PATCH")


class HttpError(Exception):
    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"error": message, **extra}


def _norm(path: str) -> str:
    return path.rstrip("/") or "/"


async def _collect(agen: Any) -> list:
    return [chunk async for chunk in agen]


class LBApp:
    """Routing and invocation, kept apart from the HTTP plumbing so each is easy to follow."""

    def __init__(self, endpoint: Endpoint, loop: LoopThread) -> None:
        self.loop = loop
        self.routes: Dict[Tuple[str, str], Route] = {(m, _norm(p)): r for (m, p), r in endpoint.routes.items()}
        self.by_name: Dict[str, Callable] = {r.function.__name__: r.function for r in endpoint.routes.values()}

    def invoke(self, fn: Callable, data: Any) -> Any:
        kwargs = kwargs_for(fn, data)
        if inspect.iscoroutinefunction(fn):
            return self.loop.submit(fn(**kwargs)).result()
        if inspect.isasyncgenfunction(fn):
            return self.loop.submit(_collect(fn(**kwargs))).result()
        if inspect.isgeneratorfunction(fn):
            return list(fn(**kwargs))
        return fn(**kwargs)

    def handle(self, method: str, raw_path: str, body: bytes) -> Tuple[int, Any]:
        url = urllib.parse.urlsplit(raw_path)
        path = _norm(url.path)
        if path == "/ping":
            return 200, {"status": "healthy"}
        if path == "/execute":
            if method != "POST":
                raise HttpError(405, "use POST /execute")
            request = self._json(body)
            if not isinstance(request, dict):
                raise HttpError(400, 'body must be {"function": <name>, "input": {...}}',
                                error_type="InputValidationError")
            fn = self.by_name.get(request.get("function"))
            if fn is None:
                raise HttpError(404, f"no function {request.get('function')!r} on this endpoint")
            return 200, {"output": self._run(fn, request.get("input"))}
        route = self.routes.get((method, path))
        if route is None:
            allowed = sorted(m for m, p in self.routes if p == path)
            if allowed:
                raise HttpError(405, f"{method} not allowed on {path}; use {', '.join(allowed)}")
            raise HttpError(404, f"no route {method} {path}")
        if method in BODY_METHODS:
            data = self._json(body) if body.strip() else {}
        else:
            data = self._query(route.function, url.query)
        return 200, self._run(route.function, data)

    def _json(self, body: bytes) -> Any:
        try:
            return json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as err:
            raise HttpError(400, f"invalid JSON body: {err}", error_type="InputValidationError") from None
        except RecursionError:  # nested past the decoder's stack (the platform stops such bodies first)
            raise HttpError(400, "invalid JSON body: nested too deep", error_type="InputValidationError") from None

    def _query(self, fn: Callable, query: str) -> Dict[str, Any]:
        try:
            return query_kwargs(fn, urllib.parse.parse_qs(query, keep_blank_values=True))
        except Exception as exc:
            raise HttpError(400, str(exc), error_type="InputValidationError") from None

    def _run(self, fn: Callable, data: Any) -> Any:
        try:
            return self.invoke(fn, data)
        except Exception as exc:
            kind = "InputValidationError" if is_input_error(exc) else type(exc).__name__
            status = 400 if is_input_error(exc) else 500
            if status == 500:
                logger.error("%s failed:\n%s", fn.__name__, traceback.format_exc().rstrip())
            raise HttpError(status, f"{kind}: {exc}", error_type=kind, error_message=str(exc)) from None


class UnavailableApp:
    """The app's module did not import: `/ping` stays healthy (so the platform routes here and the
    caller learns why), everything else answers 503 with the import error."""

    def __init__(self, error: Dict[str, Any]) -> None:
        self.error = {k: v for k, v in error.items() if k != "error_traceback"}  # the traceback is in the log

    def handle(self, method: str, raw_path: str, body: bytes) -> Tuple[int, Any]:
        if _norm(urllib.parse.urlsplit(raw_path).path) == "/ping":
            return 200, {"status": "healthy"}
        raise HttpError(503, self.error["error_message"], **{k: v for k, v in self.error.items() if k != "error"})


def _answer(app: "LBApp | UnavailableApp", method: str, path: str, body: bytes) -> Tuple[int, bytes]:
    """One request's status and JSON bytes: every failure is still an answer."""
    try:
        status, payload = app.handle(method, path, body)
        return status, json.dumps(payload).encode("utf-8")
    except HttpError as err:
        return err.status, json.dumps(err.body).encode("utf-8")
    except Exception as err:  # a return value that is not JSON, or a runtime bug: still an answer
        logger.exception("LB request %s %s failed", method, path)
        kind = type(err).__name__
        return 500, json.dumps({"error": f"{kind}: {err}", "error_type": kind, "error_message": str(err)}).encode("utf-8")


def _log_request(address: str, path: str, line: str, status: int) -> None:
    # The platform's health check calls /ping every second: logging each would bury the app's
    # own output in `svc logs` and `svc run`. A failing /ping is still logged.
    if status == 200 and path == "/ping":
        return
    logger.info('%s "%s" %s -', address, line, status)


class LBServer(HttpTransport):
    """The app behind the selector transport (./_lb_transport.py): bounded threads, a real backlog, timeouts."""

    def __init__(self, app: "LBApp | UnavailableApp", listener: socket.socket, **limits: Any) -> None:
        super().__init__(lambda method, path, body: _answer(app, method, path, body), _log_request, listener, **limits)
        self.app = app


def make_server(app: "LBApp | UnavailableApp", port: Optional[int]) -> LBServer:
    if port is None:
        raise RuntimeError("SVC_LB_PORT is not set: a load-balanced worker needs the port to listen on")
    return LBServer(app, tcp_listener("127.0.0.1", port), **limits_from_env())


def limits_from_env() -> Dict[str, Any]:
    """SVC_LB_THREADS, SVC_LB_QUEUED, SVC_LB_IDLE_TIMEOUT_S, SVC_LB_REQUEST_TIMEOUT_S (docs/platform.md)."""
    out: Dict[str, Any] = {}
    for name, key, kind in (("SVC_LB_THREADS", "threads", int), ("SVC_LB_QUEUED", "queued", int),
                            ("SVC_LB_IDLE_TIMEOUT_S", "idle_timeout_s", float), ("SVC_LB_REQUEST_TIMEOUT_S", "request_timeout_s", float)):
        value = os.environ.get(name, "").strip()
        if value:
            try:
                out[key] = kind(value)
            except ValueError:
                logger.warning("%s=%r is not a number: using the default", name, value)
    return out
