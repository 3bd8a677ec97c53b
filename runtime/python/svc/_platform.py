"""The worker's client for the platform's worker routes (contracts section 4)."""
import json
import urllib.parse
from typing import Any, Callable, Dict, Iterable, Optional

from . import _http
from ._env import WorkerEnv
from ._log import logger

LONG_POLL_TIMEOUT_S = 30  # the platform holds job-take and signals up to 20 s
DONE_RETRIES = 3
MIN_EMPTY_POLL_S = 0.2  # spacing of empty long polls when a platform answers them without holding


class WorkerClient:
    def __init__(self, env: WorkerEnv) -> None:
        self.env = env
        # Done-and-take: when `wants_next()` is true a final job-done asks for the next job
        # (`take=1`); a job in the answer goes to `on_next(payload)` (a job-take answer's body).
        self.wants_next: Optional[Callable[[], bool]] = None
        self.on_next: Optional[Callable[[Dict[str, Any]], None]] = None

    def _job_url(self, template: str, job_id: str) -> str:
        return template.replace("$ID", urllib.parse.quote(job_id, safe=""))

    def take(self, in_progress: bool) -> _http.Response:
        """Long-poll for a job; the caller handles 204, 429 and errors."""
        sep = "&" if "?" in self.env.take_url else "?"
        url = f"{self.env.take_url}{sep}job_in_progress={int(in_progress)}"
        return _http.request("GET", url, token=self.env.token, timeout=LONG_POLL_TIMEOUT_S)

    def done(self, job_id: str, body: Dict[str, Any], stream: bool = False, take_next: bool = True) -> bool:
        """Report a job's result, retried up to 3 times. False when the platform no longer wants it.

        Raises TypeError/ValueError for a body JSON cannot carry. With `take_next` (and
        `wants_next()`), the answer may carry the next job: see `on_next`."""
        data = json.dumps(body, allow_nan=False).encode("utf-8")  # NaN/Infinity are not JSON: ValueError
        url = f"{self._job_url(self.env.done_url, job_id)}?isStream={'true' if stream else 'false'}"
        take = bool(take_next and self.on_next and self.wants_next and self.wants_next())
        if take:
            url += "&take=1"
        try:
            resp = _http.request_with_retries("POST", url, data=data, token=self.env.token, retries=DONE_RETRIES)
        except _http.TransportError as err:
            logger.error("job %s: result lost, platform unreachable: %s", job_id, err)
            return False
        if resp.status == 404:
            logger.info("job %s: platform no longer holds it (cancelled or timed out); result dropped", job_id)
            return False
        if resp.status != 200:
            logger.error("job %s: job-done answered HTTP %s: %s", job_id, resp.status, resp.text[:200])
            return False
        if take and self.on_next and isinstance(resp.body, dict):
            nxt = resp.body.get("next")
            if isinstance(nxt, dict) and "id" in nxt:
                self.on_next(nxt)
        return True

    def holding(self) -> Optional[Any]:
        """Results this thread holds back for a batch (None: this client sends each at once)."""
        return None

    def flush(self, held: Optional[Any] = None) -> None:
        """Sends held results (nothing to do for this client)."""

    def stream(self, job_id: str, chunk: Any) -> bool:
        """Send one generator chunk. False when the job is no longer this worker's (404)."""
        url = self._job_url(self.env.stream_url, job_id)
        resp = _http.request_with_retries("POST", url, {"output": chunk}, token=self.env.token)
        if resp.status not in (200, 404):  # fails the job: a stream with holes is no result
            raise RuntimeError(f"job-stream answered HTTP {resp.status}: {resp.text[:200]}")
        return resp.status == 200

    def ping(self, job_ids: Iterable[str]) -> None:
        ids = ",".join(job_ids)
        url = self.env.ping_url + (f"?job_id={urllib.parse.quote(ids, safe=',')}" if ids else "")
        _http.request("GET", url, token=self.env.token, timeout=10)

    def signals(self) -> Optional[Dict[str, Any]]:
        """Long-poll for cancel/stop signals; None when there are none."""
        resp = _http.request("GET", self.env.signals_url, token=self.env.token, timeout=LONG_POLL_TIMEOUT_S)
        if resp.status == 200 and isinstance(resp.body, dict):
            return resp.body
        if resp.status not in (200, 204):
            raise _http.TransportError(f"signals answered HTTP {resp.status}")
        return None
