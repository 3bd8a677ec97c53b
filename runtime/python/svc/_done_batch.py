"""Results of several jobs in one request to the embedded platform (docs/platform.md, "Hot path").

A job thread that has more taken jobs to run right after the current one holds the current
result back (encoded at once, so an output that is not JSON still fails its own job) and sends
it with the next ones in one `jobs-done` request, whose answer can hand the next jobs. Held
results go out when the thread's jobs run out, or as soon as the next job has run HOLD_S without
finishing: a slow function never keeps a finished job's result waiting. Used only when the
platform names SVC_JOBS_DONE_URL; otherwise each result goes alone to job-done.
"""
import json
import threading
from typing import Any, Callable, Dict, List, Optional

from . import _http
from ._env import WorkerEnv
from ._log import logger
from ._platform import DONE_RETRIES, WorkerClient

HOLD_S = 0.002  # how long a held result may wait on the next job of its thread
MAX_HELD = 32  # results sent together at most


class BatchingClient(WorkerClient):
    def __init__(self, env: WorkerEnv, jobs_done_url: str) -> None:
        super().__init__(env)
        self.jobs_done_url = jobs_done_url
        # Set by the queue worker: True when another taken job runs right after this one on this thread.
        self.more_follow: Optional[Callable[[], bool]] = None
        self._local = threading.local()

    def _held(self) -> List[str]:
        held = getattr(self._local, "held", None)
        if held is None:
            held = self._local.held = []
        return held

    def done(self, job_id: str, body: Dict[str, Any], stream: bool = False, take_next: bool = True) -> bool:
        line = json.dumps({"id": job_id, **body}, allow_nan=False)  # not JSON: raises, as job-done would
        held = self._held()
        held.append(line)
        if take_next and self.more_follow and self.more_follow() and len(held) < MAX_HELD:
            return True
        take = int(self.wants_next()) if take_next and self.wants_next else 0
        gone = self._send(take)
        return gone is not None and job_id not in gone

    def flush(self) -> None:
        """Send the results this thread holds (no job asked for)."""
        if self._held():
            self._send(0)

    def wait(self, event: threading.Event, timeout: Optional[float]) -> bool:
        """event.wait(timeout), sending this thread's held results if the wait outlasts HOLD_S."""
        if not self._held() or (timeout is not None and timeout <= HOLD_S):
            return event.wait(timeout)
        if event.wait(HOLD_S):
            return True
        self.flush()
        return event.wait(None if timeout is None else timeout - HOLD_S)

    def _send(self, take: int) -> Optional[List[str]]:
        """Posts the held results; answers the ids the platform no longer wanted (None: none was taken)."""
        lines, self._local.held = self._held(), []
        url = f"{self.jobs_done_url}?take={take}" if take else self.jobs_done_url
        try:
            resp = _http.request_with_retries("POST", url, data="\n".join(lines).encode("utf-8"), token=self.env.token,
                                              retries=DONE_RETRIES, content_type="application/x-ndjson")
        except _http.TransportError as err:
            logger.error("results of %d job(s) lost, platform unreachable: %s", len(lines), err)
            return None
        if resp.status != 200 or not isinstance(resp.body, dict):
            logger.error("jobs-done answered HTTP %s: %s", resp.status, resp.text[:200])
            return None
        gone = [str(g) for g in resp.body.get("gone") or []]
        for job_id in gone:
            logger.info("job %s: platform no longer holds it (cancelled or timed out); result dropped", job_id)
        for payload in resp.body.get("next") or []:
            if self.on_next and isinstance(payload, dict) and "id" in payload:
                self.on_next(payload)
        return gone
