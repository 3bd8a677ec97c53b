"""Cross-endpoint calls (contracts section 5), and the calls of `.remote`/`.spawn`/`.map` (fanout.py).

Inside a worker, calling an `@Endpoint` function that belongs to another endpoint sends the
call to that endpoint through the platform: QB targets via `runsync` (then `status` polls),
LB targets via `execute`. Endpoint URLs come from the platform's GraphQL `getBuild`, once per
process. Outside a worker they are the endpoints `svc deploy` made, found where the CLI finds them
(_locate.py: PLATFORM_API_URL, the deploy state in .svc/deployments/, the embedded platform's state
folder and its key); a platform is asked for the app's environment's endpoints (SVC_ENV, else the
app's only environment, else production).
"""
import json
import os
import threading
import time
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from . import _batch_call, _http, _locate, _manifest, _pacing
from ._call import input_for
from .errors import RemoteCallError

FINAL_STATUSES = ("COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT")
POLL_INTERVAL_S = 0.25
POLL_INTERVAL_MAX_S = 2.0
REQUEST_TIMEOUT_S = 120  # runsync holds the request up to 90 s by default

_urls_lock = threading.Lock()
_urls: Optional[Dict[str, str]] = None


def is_remote(function_name: str, endpoint_name: str) -> bool:
    """True inside a worker of another endpoint; outside workers every call is local."""
    current = os.environ.get("SVC_ENDPOINT_NAME")
    return bool(current) and _manifest.owner_of(function_name, endpoint_name) != current


def _in_worker() -> bool:
    return bool(os.environ.get("SVC_BUILD_ID"))


def _api_url() -> str:
    url = os.environ.get("PLATFORM_API_URL") or os.environ.get("SVC_API_BASE")
    if not url and not _in_worker():
        url = _locate.located().url
    if not url:
        raise RemoteCallError("cross-endpoint call needs PLATFORM_API_URL (set by the platform for workers)")
    return url.rstrip("/")


def api_key() -> Optional[str]:
    key = os.environ.get("PLATFORM_API_KEY")
    return key if key or _in_worker() else _locate.located().key


def _graphql(query: str, variables: Dict[str, Any], what: str) -> Dict[str, Any]:
    try:
        resp = _http.request_with_retries("POST", f"{_api_url()}/graphql", {"query": query, "variables": variables}, token=api_key())
    except _http.TransportError as err:
        raise RemoteCallError(f"cannot reach the platform API: {err}") from None
    body = resp.body if isinstance(resp.body, dict) else {}
    if resp.status != 200 or body.get("errors"):
        raise RemoteCallError(f"{what} failed: HTTP {resp.status} {body.get('errors') or resp.text[:200]}")
    return body.get("data") or {}


def _deployed_urls(manifest: Dict[str, Any]) -> Dict[str, str]:
    """Outside a worker: the endpoints of the app's environment, by manifest endpoint name."""
    app = manifest.get("app")
    data = _graphql("query($n: String!) { app(name: $n) { environments { name endpoints { name url } } } }", {"n": app}, f"app({app!r})")
    environments = ((data.get("app") or {}).get("environments")) or []
    wanted = os.environ.get("SVC_ENV") or (environments[0]["name"] if len(environments) == 1 else "production")
    env = next((e for e in environments if e.get("name") == wanted), None)
    if env is None:
        raise RemoteCallError(f"app {app!r} has no environment {wanted!r} on the platform; deploy it (svc deploy --env {wanted}) or set SVC_ENV")
    urls: Dict[str, str] = {}
    for name in manifest.get("endpoints") or {}:
        match = next((e for e in env["endpoints"] if e["name"] == name or e["name"].endswith(f"-{name}")), None)
        if match:
            urls[name] = match["url"]
    return urls


def _fetch_urls() -> Dict[str, str]:
    build_id = os.environ.get("SVC_BUILD_ID")
    if not build_id:  # not started by a platform: the endpoints `svc deploy` made, found as the CLI finds them
        where = _locate.located()
        if where.urls is not None and where.key:
            return where.urls
        if where.url and where.key:
            return _deployed_urls(_manifest.load())
        return {}
    # The id is inlined as a string literal: the simplest GraphQL any server parses.
    query = "query { getBuild(id: %s) { manifest } }" % json.dumps(build_id)
    try:
        resp = _http.request_with_retries("POST", f"{_api_url()}/graphql", {"query": query}, token=api_key())
    except _http.TransportError as err:
        raise RemoteCallError(f"cannot reach the platform API: {err}") from None
    body = resp.body if isinstance(resp.body, dict) else {}
    if resp.status != 200 or body.get("errors"):
        raise RemoteCallError(f"getBuild({build_id}) failed: HTTP {resp.status} {body.get('errors') or resp.text[:200]}")
    manifest = ((body.get("data") or {}).get("getBuild") or {}).get("manifest")
    if isinstance(manifest, str):  # a server may return the JSON scalar as text
        manifest = json.loads(manifest)
    if not isinstance(manifest, dict):
        raise RemoteCallError(f"getBuild({build_id}) returned no manifest")
    return dict(manifest.get("urls") or {})


def endpoint_url(endpoint: str) -> str:
    global _urls
    with _urls_lock:
        if _urls is None or endpoint not in _urls:  # refetch once for an endpoint deployed after we cached
            _urls = _fetch_urls()
        url = _urls.get(endpoint)
    if not url:
        raise RemoteCallError(f"no URL for endpoint {endpoint!r}: {_not_found()}", endpoint=endpoint)
    return url.rstrip("/")


def _not_found() -> str:
    if _in_worker():
        return "it is not in this build's manifest; is it deployed?"
    where = _locate.located()
    if where.url and where.key:
        return f"the platform {where.url} (from {where.source}) has no such endpoint of this app; deploy it (svc deploy)"
    return where.advice()


def _fields(error: Any) -> Dict[str, Any]:
    """The worker's error fields; the platform may hand them over as JSON text."""
    if isinstance(error, str) and error.lstrip().startswith("{"):
        try:
            error = json.loads(error)
        except ValueError:
            pass
    return error if isinstance(error, dict) else {}


def failure(fn_name: str, endpoint: str, error: Any, status: Any, job_id: Optional[str] = None) -> RemoteCallError:
    """`ValueError: item 500 is cursed (square on endpoint 'square', job 1f2e, FAILED)`, the traceback apart."""
    fields = _fields(error)
    kind = fields.get("error_type") if isinstance(fields.get("error_type"), str) else None
    message = fields.get("error_message", fields.get("error")) if fields else error
    summary = f"{kind}: {message}" if kind else str(message if message is not None else status)
    trace = fields.get("error_traceback")
    shown_status = status if str(status) != summary else None  # a CANCELLED job's error is its status
    where = ", ".join(str(part) for part in (f"{fn_name} on endpoint {endpoint!r}", job_id and f"job {job_id}", shown_status) if part)
    return RemoteCallError(f"{summary} ({where})", endpoint=endpoint, function=fn_name, error=error, status=status,
                           job_id=job_id, error_type=kind, traceback=trace if isinstance(trace, str) and trace.strip() else None)


def _post(fn_name: str, endpoint: str, url: str, payload: Any) -> _http.Response:
    try:
        return _pacing.send(endpoint, lambda: _http.request("POST", url, payload, token=api_key(), timeout=REQUEST_TIMEOUT_S))
    except _http.TransportError as err:
        raise failure(fn_name, endpoint, str(err), "unreachable") from None


def _call_qb(fn_name: str, endpoint: str, url: str, payload: Dict[str, Any]) -> Any:
    return _follow_qb(fn_name, endpoint, url, _post(fn_name, endpoint, f"{url}/runsync", {"input": payload}))


def _settled(fn_name: str, endpoint: str, resp: _http.Response) -> Optional[Tuple[bool, Any]]:
    """What a /runsync or /status answer says of the call: (True, output), (False, error), or None while the job runs."""
    job = resp.body if isinstance(resp.body, dict) else {}
    status = job.get("status")
    if resp.status >= 400 and status not in FINAL_STATUSES:
        return False, failure(fn_name, endpoint, job.get("error") or resp.text[:500], f"HTTP {resp.status}", job.get("id"))
    if status == "COMPLETED":
        return True, job.get("output")
    if status in FINAL_STATUSES:
        return False, failure(fn_name, endpoint, job.get("error") or status, status, job.get("id"))
    if not job.get("id"):
        return False, failure(fn_name, endpoint, f"unexpected answer: {resp.text[:500]}", f"HTTP {resp.status}")
    return None


def _follow_qb(fn_name: str, endpoint: str, url: str, resp: _http.Response) -> Any:
    """From a /runsync answer to the job's end: its /status, polled while it runs."""
    delay = POLL_INTERVAL_S
    while True:
        settled = _settled(fn_name, endpoint, resp)
        if settled is not None:
            ok, value = settled
            if ok:
                return value
            raise value
        job_id = resp.body["id"]
        time.sleep(delay)
        delay = min(delay * 2, POLL_INTERVAL_MAX_S)
        try:
            resp = _pacing.send(endpoint, lambda: _http.request("GET", f"{url}/status/{job_id}", token=api_key(), timeout=REQUEST_TIMEOUT_S), idempotent=True)
        except _http.TransportError:
            continue  # the job goes on without us; ask again


class RunsyncLane:
    """One QB endpoint's /runsync calls as `.map`'s fast lane sends them itself (_map_lanes.py).

    The lane writes the requests and reads the answers; this says what to send and what an answer
    means. An answer that ends the call settles it; any other (the job still runs, 429, a momentary
    5xx) is carried on by `carry_on` on a thread, exactly as `.remote` would go on from it.
    """

    def __init__(self, fn_name: str, endpoint: str, url: str, key: Any, target: str) -> None:
        self.fn_name, self.endpoint, self.url, self.key, self.target = fn_name, endpoint, url, key, target
        self.gate = _pacing.gate_for(endpoint)

    def request(self, payload: Dict[str, Any]) -> Tuple[str, Dict[str, str], bytes]:
        data = json.dumps({"input": payload}, allow_nan=False).encode("utf-8")
        return self.target, _http.request_headers(api_key(), True), data

    def outcome(self, resp: _http.Response) -> Optional[Tuple[bool, Any]]:
        """The call's outcome when this first answer ends it; None: `carry_on`."""
        if resp.status in _pacing.RETRY_STATUSES:
            if resp.status == 429:  # every call to the endpoint waits, as _pacing.send does
                self.gate.close_for(_pacing.retry_after_s(resp.retry_after))
            return None
        return _settled(self.fn_name, self.endpoint, resp)

    def carry_on(self, payload: Dict[str, Any], resp: Optional[_http.Response]) -> Any:
        """Blocking: sent again (paced) after a 429/5xx or when the lane did not send it; else the job followed."""
        if resp is None or resp.status in _pacing.RETRY_STATUSES:
            return _call_qb(self.fn_name, self.endpoint, self.url, payload)
        return _follow_qb(self.fn_name, self.endpoint, self.url, resp)

    def unreachable(self, why: str) -> RemoteCallError:
        return failure(self.fn_name, self.endpoint, why, "unreachable")


def runsync_lane(fn: Callable, endpoint: str) -> Optional[RunsyncLane]:
    """A fast lane for `.map` of `fn` when its endpoint is QB and reached over plain HTTP; else None."""
    target = _manifest.owner_of(fn.__name__, endpoint)
    if _manifest.endpoint(_manifest.load(), target).get("type", "QB") == "LB":
        return None
    url = endpoint_url(target)
    route = _http.plain_route(f"{url}/runsync")
    return RunsyncLane(fn.__name__, target, url, *route) if route else None


def _call_lb(fn_name: str, endpoint: str, url: str, payload: Dict[str, Any]) -> Any:
    resp = _post(fn_name, endpoint, f"{url}/execute", {"function": fn_name, "input": payload})
    body = resp.body if isinstance(resp.body, dict) else {}
    if resp.status != 200:
        raise failure(fn_name, endpoint, body or resp.text[:500], f"HTTP {resp.status}")
    return body.get("output")


def call(fn: Callable, endpoint: str, args: tuple, kwargs: Mapping[str, Any]) -> Any:
    """Run `fn` (declared on `endpoint`) on that endpoint's workers and return its output (a batched
    function's call with lists: one job per item, the outputs in order, _batch_call.py)."""
    payload = input_for(fn, args, kwargs)
    if _manifest.endpoint(_manifest.load(), _manifest.owner_of(fn.__name__, endpoint)).get("batch"):
        return _batch_call.call(fn, payload, lambda item: call_payload(fn, endpoint, item))
    return call_payload(fn, endpoint, payload)


def call_payload(fn: Callable, endpoint: str, payload: Dict[str, Any]) -> Any:
    """`call` with the job input already made."""
    target = _manifest.owner_of(fn.__name__, endpoint)
    kind = _manifest.endpoint(_manifest.load(), target).get("type", "QB")
    url = endpoint_url(target)
    return (_call_lb if kind == "LB" else _call_qb)(fn.__name__, target, url, payload)
