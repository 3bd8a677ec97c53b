"""A fake of the svc platform for the runtime's tests.

This is a TEST DOUBLE of the embedded platform that another engineer writes in TypeScript
(platform/). It implements only what the Python runtime talks to, as docs/contracts.md
describes it: the worker protocol (section 4), the QB `runsync`/`status` and LB `execute` routes
and GraphQL `getBuild` that cross-endpoint calls use (section 5), and the output-file upload
(section 6). State lives in memory; every request is recorded for the tests to inspect.
"""
import json
import re
import secrets
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional

API_KEY = "test-api-key"
FINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT")

_WORKER_RE = re.compile(r"^/v2/_worker/([^/]+)/(job-take|job-done|jobs-done|job-stream|ping|signals|files|error)(?:/([^/]+))?$")
_PUBLIC_RE = re.compile(r"^/v2/([^/_][^/]*)/(runsync|status|execute)(?:/([^/]+))?$")
_GET_BUILD_RE = re.compile(r'getBuild\(\s*id:\s*"([^"]+)"\s*\)')


class FakePlatform:
    def __init__(self, hold: float = 0.5, runsync_wait: float = 0.2) -> None:
        self.hold = hold  # how long job-take and signals long-polls are held
        self.runsync_wait = runsync_wait  # short, so callers exercise the /status polling path
        self.cond = threading.Condition()
        self.jobs: Dict[str, Dict[str, Any]] = {}
        self.queues: Dict[str, deque] = defaultdict(deque)
        self.workers: Dict[str, Dict[str, str]] = {}
        self.signals: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
        self.signal_polls: Dict[str, int] = defaultdict(int)  # signals requests each worker has made
        self.signal_popped_by: Dict[str, int] = defaultdict(int)  # the poll that carried the last signal out
        self.stopped: set = set()
        self.pings: List[Dict[str, Any]] = []
        self.done_calls: List[Dict[str, Any]] = []
        self.files: Dict[str, Dict[str, Any]] = {}
        self.lb_ports: Dict[str, int] = {}
        self.endpoints: List[str] = []  # those getBuild lists a URL for
        self.build_id = "bld_test"
        self.graphql_calls = 0
        self.fail_done = 0  # answer this many job-done calls with 500
        self.take_429 = 0  # answer this many job-take calls with 429
        self.cancel_on_take: set = set()  # job ids cancelled while their job-take answer is on its way
        self.done_and_take = True  # job-done?take=1 hands the next queued job (contracts, "Runtime decisions")
        self.take_calls = 0
        self.jobs_done = False  # name SVC_JOBS_DONE_URL: results of several jobs in one request (docs/platform.md)
        self.jobs_done_calls: List[Dict[str, Any]] = []  # {"ids": [...], "take": "N" or None}
        # A stop ends a jobs-done wait at once (the platform releases it). False: the wait runs its `hold`, so
        # the stop signal surely comes while the worker still waits there (which of the two answers comes
        # first is a race on a real platform).
        self.stop_ends_done_wait = True
        self.refuse_echo: Optional[str] = None  # answer 400 to a jobs-done request holding an output with this "echo"
        self.reported_errors: List[Dict[str, Any]] = []  # POST error (SVC_ERROR_URL): an import failure
        self.close_after_each = False  # close each connection after its answer (no `Connection: close`)
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.platform = self  # type: ignore[attr-defined]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- test controls -------------------------------------------------------------------------
    def register_worker(self, endpoint: str) -> Dict[str, str]:
        wid = "wk_" + secrets.token_hex(4)
        self.workers[wid] = {"endpoint": endpoint, "token": secrets.token_hex(8)}
        return {"id": wid, **self.workers[wid]}

    def worker_env(self, wid: str) -> Dict[str, str]:
        w = self.workers[wid]
        prefix = f"{self.base}/v2/_worker/{wid}"
        env = {
            "SVC_WORKER_ID": wid, "SVC_WORKER_TOKEN": w["token"], "SVC_ENDPOINT_ID": "ep_" + w["endpoint"],
            "SVC_ENDPOINT_NAME": w["endpoint"], "SVC_BUILD_ID": self.build_id, "SVC_API_BASE": self.base,
            "SVC_JOB_TAKE_URL": f"{prefix}/job-take", "SVC_JOB_DONE_URL": f"{prefix}/job-done/$ID",
            "SVC_JOB_STREAM_URL": f"{prefix}/job-stream/$ID", "SVC_PING_URL": f"{prefix}/ping",
            "SVC_SIGNALS_URL": f"{prefix}/signals", "SVC_ERROR_URL": f"{prefix}/error", "PLATFORM_API_URL": self.base, "PLATFORM_API_KEY": API_KEY,
        }
        if self.jobs_done:
            env["SVC_JOBS_DONE_URL"] = f"{prefix}/jobs-done"
        return env

    def submit(self, endpoint: str, input: Any, timeout_ms: int = 600000) -> str:
        job_id = "job_" + secrets.token_hex(6)
        with self.cond:
            self.jobs[job_id] = {"id": job_id, "endpoint": endpoint, "input": input, "status": "IN_QUEUE",
                                 "executionTimeoutMs": timeout_ms, "stream": [], "worker": None}
            self.queues[endpoint].append(job_id)
            self.cond.notify_all()
        return job_id

    def wait_for(self, predicate, timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                value = predicate()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("timed out waiting for the fake platform state")
                self.cond.wait(min(left, 0.05))

    def wait_job(self, job_id: str, timeout: float = 10.0) -> Dict[str, Any]:
        return self.wait_for(lambda: self.jobs[job_id] if self.jobs[job_id]["status"] in FINAL else None, timeout)

    def wait_running(self, job_id: str, timeout: float = 10.0) -> None:
        self.wait_for(lambda: self.jobs[job_id]["status"] == "IN_PROGRESS", timeout)

    def cancel(self, job_id: str) -> None:
        with self.cond:
            job = self.jobs[job_id]
            job["status"] = "CANCELLED"
            if job["worker"]:
                self.signals[job["worker"]].append({"cancel": [job_id], "stop": False})
            self.cond.notify_all()

    def stop_worker(self, wid: str) -> None:
        with self.cond:
            self.stopped.add(wid)
            self.signals[wid].append({"cancel": [], "stop": True})
            self.cond.notify_all()

    def done_calls_for(self, job_id: str) -> List[Dict[str, Any]]:
        with self.cond:
            return [c for c in self.done_calls if c["job_id"] == job_id]

    # -- request handling ----------------------------------------------------------------------
    def view(self, job: Dict[str, Any]) -> Dict[str, Any]:
        out = {"id": job["id"], "status": job["status"]}
        for key in ("output", "error"):
            if key in job:
                out[key] = job[key]
        return out

    def handle_worker(self, h: "_Handler", wid: str, op: str, job_id: Optional[str], query: Dict[str, str]):
        worker = self.workers.get(wid)
        if not worker or h.headers.get("Authorization") != f"Bearer {worker['token']}":
            return 401, {"error": "bad worker token"}
        if op == "job-take":
            with self.cond:
                self.take_calls += 1
                if self.take_429:
                    self.take_429 -= 1
                    return 429, {"error": "slow down"}
                deadline = time.monotonic() + self.hold
                queue = self.queues[worker["endpoint"]]
                while not queue and wid not in self.stopped and time.monotonic() < deadline:
                    self.cond.wait(deadline - time.monotonic())
                if not queue or wid in self.stopped:  # no new work for a stopping worker
                    return 204, None
                job = self.jobs[queue.popleft()]
                job.update(status="IN_PROGRESS", worker=wid)
                if job["id"] in self.cancel_on_take:  # the cancel signal overtakes this answer
                    job["status"] = "CANCELLED"
                    self.signals[wid].append({"cancel": [job["id"]], "stop": False})
                    self.cond.notify_all()
                    # Answer once the worker has handled the cancel: its signals thread polls again only then.
                    self.wait_for(lambda: not self.signals[wid] and self.signal_polls[wid] > self.signal_popped_by[wid])
                job["taken_at_call"] = self.take_calls
                self.cond.notify_all()
                return 200, {"id": job["id"], "input": job["input"], "executionTimeoutMs": job["executionTimeoutMs"]}
        if op == "signals":
            with self.cond:
                self.signal_polls[wid] += 1
                poll = self.signal_polls[wid]
                self.cond.notify_all()
                deadline = time.monotonic() + self.hold
                while not self.signals[wid] and time.monotonic() < deadline:
                    self.cond.wait(deadline - time.monotonic())
                if not self.signals[wid]:
                    return 204, None
                self.signal_popped_by[wid] = poll
                return 200, self.signals[wid].pop(0)
        if op == "ping":
            with self.cond:
                self.pings.append({"worker": wid, "job_id": query.get("job_id"), "at": time.monotonic()})
                self.cond.notify_all()
            return 200, {"ok": True}
        if op == "error":
            with self.cond:
                self.reported_errors.append({"worker": wid, **json.loads(h.body)})
                self.cond.notify_all()
            return 200, {"ok": True}
        if op == "files":
            file_id = "f_" + secrets.token_hex(4)
            name = query["name"]
            self.files[file_id] = {"name": name, "data": h.body, "type": h.headers.get("Content-Type")}
            return 200, {"url": f"{self.base}/v2/files/{file_id}/{urllib.parse.quote(name)}",
                         "expiresAt": "2000-01-08T00:00:00Z"}
        if op == "jobs-done":
            return self.handle_jobs_done(h, wid, worker, query)
        body = json.loads(h.body or b"null")
        with self.cond:
            job = self.jobs.get(job_id or "")
            if not job or job["worker"] != wid or job["status"] != "IN_PROGRESS":
                return 404, {"error": "job is not this worker's"}
            if op == "job-stream":
                job["stream"].append(body["output"])
                return 200, {"ok": True}
            self.done_calls.append({"job_id": job_id, "isStream": query.get("isStream"), "take": query.get("take"),
                                    "body": body})
            if self.fail_done:
                self.fail_done -= 1
                return 500, {"error": "transient"}
            final = "error" in body or body.get("status") != "IN_PROGRESS"
            if "error" in body:
                job.update(status="FAILED", error=body["error"])
            elif final:
                job.update(status="COMPLETED", output=body.get("output"))
            self.cond.notify_all()
            queue = self.queues[worker["endpoint"]]
            if final and self.done_and_take and query.get("take") == "1" and queue and wid not in self.stopped:
                nxt = self.jobs[queue.popleft()]
                nxt.update(status="IN_PROGRESS", worker=wid)
                return 200, {"ok": True, "next": {"id": nxt["id"], "input": nxt["input"],
                                                  "executionTimeoutMs": nxt["executionTimeoutMs"]}}
            return 200, {"ok": True}

    def handle_jobs_done(self, h: "_Handler", wid: str, worker: Dict[str, str], query: Dict[str, str]):
        """One final result per line; `take=N` hands up to N queued jobs (docs/platform.md, "Hot path")."""
        results = [json.loads(line) for line in h.body.decode().split("\n") if line.strip()]
        with self.cond:
            self.jobs_done_calls.append({"ids": [r["id"] for r in results], "take": query.get("take"),
                                         "wait": query.get("wait"), "at": time.monotonic()})
            if self.refuse_echo is not None and any((r.get("output") or {}).get("echo") == self.refuse_echo for r in results):
                return 400, {"error": "The job's result is nested deeper than 256 levels."}  # as a platform refuses a line
            gone = []
            for r in results:
                job = self.jobs.get(r["id"])
                if not job or job["worker"] != wid or job["status"] != "IN_PROGRESS":
                    gone.append(r["id"])
                elif "error" in r:
                    job.update(status="FAILED", error=r["error"])
                else:
                    job.update(status="COMPLETED", output=r.get("output"))
            queue, nxt = self.queues[worker["endpoint"]], []
            self.cond.notify_all()
            if query.get("wait") == "1" and int(query.get("take") or 0) > 0:  # a long poll, as job-take's
                deadline = time.monotonic() + self.hold
                while not queue and (wid not in self.stopped or not self.stop_ends_done_wait) and time.monotonic() < deadline:
                    self.cond.wait(deadline - time.monotonic())
            while queue and len(nxt) < int(query.get("take") or 0) and wid not in self.stopped:
                job = self.jobs[queue.popleft()]
                job.update(status="IN_PROGRESS", worker=wid)
                nxt.append({"id": job["id"], "input": job["input"], "executionTimeoutMs": job["executionTimeoutMs"]})
            self.cond.notify_all()
            return 200, {"ok": True, "gone": gone, "next": nxt}

    def handle_public(self, h: "_Handler", endpoint: str, op: str, job_id: Optional[str]):
        if h.headers.get("Authorization") != f"Bearer {API_KEY}":
            return 401, {"error": "bad API key"}
        if op == "execute":  # the platform proxies LB requests to a worker's loopback port
            req = urllib.request.Request(f"http://127.0.0.1:{self.lb_ports[endpoint]}/execute", data=h.body,
                                         method="POST", headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    return resp.status, json.loads(resp.read())
            except urllib.error.HTTPError as err:
                return err.code, json.loads(err.read())
        if op == "runsync":
            job_id = self.submit(endpoint, json.loads(h.body)["input"])
            try:
                self.wait_job(job_id, timeout=self.runsync_wait)
            except AssertionError:
                pass  # not final yet: the caller polls /status
        with self.cond:
            job = self.jobs.get(job_id or "")
            return (200, self.view(job)) if job else (404, {"error": "no such job"})

    def handle_graphql(self, h: "_Handler"):
        if h.headers.get("Authorization") != f"Bearer {API_KEY}":
            return 401, {"errors": [{"message": "bad API key"}]}
        match = _GET_BUILD_RE.search(json.loads(h.body)["query"])
        if not match or match.group(1) != self.build_id:
            return 200, {"errors": [{"message": "unknown build"}]}
        self.graphql_calls += 1
        urls = {name: f"{self.base}/v2/{name}" for name in self.endpoints}
        return 200, {"data": {"getBuild": {"id": self.build_id, "manifest": {"urls": urls}}}}


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # workers killed at teardown leave broken connections: not worth a traceback


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the platform's node server

    def _dispatch(self) -> None:
        platform: FakePlatform = self.server.platform  # type: ignore[attr-defined]
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        self.body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if m := _WORKER_RE.match(url.path):
            status, payload = platform.handle_worker(self, m.group(1), m.group(2), m.group(3), query)
        elif m := _PUBLIC_RE.match(url.path):
            status, payload = platform.handle_public(self, m.group(1), m.group(2), m.group(3))
        elif url.path == "/graphql":
            status, payload = platform.handle_graphql(self)
        else:
            status, payload = 404, {"error": "no route"}
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        if platform.close_after_each:
            self.close_connection = True

    do_GET = do_POST = _dispatch

    def log_message(self, *args: Any) -> None:
        pass
