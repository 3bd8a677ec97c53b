"""Results of several jobs in one request to the embedded platform (docs/platform.md, "Hot path").

A job thread that has more taken jobs to run right after the current one holds the current
result back (encoded at once, so an output that is not JSON still fails its own job) and sends
it with the next ones in one `jobs-done` request, whose answer can hand the next jobs. Held
results go out when the thread's jobs run out, or once the next job has run HOLD_S without
finishing (the watchdog sends them: a slow function never keeps a finished job's result waiting).
When the thread's jobs run out, the request also waits for the next job (`wait=1`, a long poll like
job-take's): an idle worker gets its next job in the answer to its last result. Used only when the
platform names SVC_JOBS_DONE_URL; otherwise each result goes alone to job-done.

One result the platform refuses (400) never costs the others: the batch is sent again one result
at a time, and a result refused alone fails its own job with the platform's answer.
"""
import json
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _http
from ._env import WorkerEnv
from ._log import logger
from ._platform import DONE_RETRIES, LONG_POLL_TIMEOUT_S, WorkerClient

MAX_HELD = 32  # results sent together at most


Result = Tuple[str, str]  # (job id, its jobs-done line)


class Held:
    """Encoded results a job thread holds back; the watchdog may send them from its own thread."""

    def __init__(self) -> None:
        self.lines: List[Result] = []
        self.lock = threading.Lock()

    def add(self, result: Result) -> int:
        with self.lock:
            self.lines.append(result)
            return len(self.lines)

    def take(self) -> List[Result]:
        with self.lock:
            lines, self.lines = self.lines, []
            return lines


class BatchingClient(WorkerClient):
    def __init__(self, env: WorkerEnv, jobs_done_url: str) -> None:
        super().__init__(env)
        self.jobs_done_url = jobs_done_url
        # Set by the queue worker: True when another taken job runs right after this one on this thread.
        self.more_follow: Optional[Callable[[], bool]] = None
        self._local = threading.local()

    def _held(self) -> Held:
        held = getattr(self._local, "held", None)
        if held is None:
            held = self._local.held = Held()
        return held

    def holding(self) -> Optional[Held]:
        held = getattr(self._local, "held", None)
        return held if held is not None and held.lines else None

    def done(self, job_id: str, body: Dict[str, Any], stream: bool = False, take_next: bool = True) -> bool:
        line = json.dumps({"id": job_id, **body}, allow_nan=False)  # not JSON: raises, as job-done would
        held = self._held()
        more = bool(take_next and self.more_follow and self.more_follow())
        if held.add((job_id, line)) < MAX_HELD and more:
            return True
        take = int(self.wants_next()) if take_next and self.wants_next else 0
        gone = self._send(held.take(), take, wait=not more)
        return gone is not None and job_id not in gone

    def flush(self, held: Optional[Held] = None) -> None:
        """Send the results this thread (or `held`) holds, asking for no job."""
        lines = (held or self._held()).take()
        if lines:
            self._send(lines, 0, wait=False)

    def _post(self, lines: List[str], take: int, wait: bool) -> Optional[_http.Response]:
        url = (f"{self.jobs_done_url}?take={take}" + ("&wait=1" if wait else "")) if take else self.jobs_done_url
        try:
            return _http.request_with_retries("POST", url, data="\n".join(lines).encode("utf-8"), token=self.env.token,
                                              retries=DONE_RETRIES, content_type="application/x-ndjson",
                                              timeout=LONG_POLL_TIMEOUT_S)
        except _http.TransportError as err:
            logger.error("results of %d job(s) lost, platform unreachable: %s", len(lines), err)
            return None

    def _send(self, results: List[Result], take: int, wait: bool) -> Optional[List[str]]:
        """Posts results; answers the ids the platform no longer wanted (None: none was taken).
        With `take` and `wait`, the answer waits for a job when none is queued (a long poll)."""
        resp = self._post([line for _, line in results], take, wait)
        if resp is None:
            return None
        if resp.status == 400:
            return self._send_each(results, resp.text)
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

    def _send_each(self, results: List[Result], refusal: str) -> List[str]:
        """The platform refused a request (400): each result alone, so that only a refused one fails."""
        if len(results) > 1:
            logger.warning("jobs-done refused a batch of %d results; sending them one at a time", len(results))
            return [job_id for result in results for job_id in self._send([result], 0, wait=False) or []]
        job_id, _ = results[0]
        logger.error("job %s: the platform refused its result: %s", job_id, refusal[:500])
        failed = json.dumps({"id": job_id, "error": {
            "error_type": "OutputRefusedError",
            "error_message": f"the platform refused the job's result: {refusal[:2000]}",
            "error_traceback": ""}})
        resp = self._post([failed], 0, wait=False)
        if resp is None or resp.status != 200:
            logger.error("job %s: its failure could not be reported either (HTTP %s)", job_id, resp and resp.status)
        return []
