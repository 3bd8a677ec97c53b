"""Worker entry point: `serve(endpoint_name)`, called by the generated `handlers/<endpoint>.py`.

A module that cannot be imported does not crash-loop the worker: it keeps serving and answers every
job (QB: FAILED) or request (LB: 503) with the import error, its file:line and the spec's remedy, so
the caller sees why at once on any platform (docs/platform.md, "A worker that cannot import its module").
"""
import gc
import importlib
import os
import signal
import sys
import threading
import traceback
from typing import Any, Callable, Dict, List, Optional

from . import _heartbeat, _http, _log, _manifest, _relay, _signals, _stock_worker
from ._batch_worker import BatchWorker
from ._done_batch import BatchingClient
from ._env import WorkerEnv
from ._jobs import Job, JobRunner
from ._lb_server import LBApp, UnavailableApp, make_server
from ._lb_unix import make_unix_server
from ._log import logger
from ._loop import LoopThread
from ._traceback import app_traceback
from ._platform import WorkerClient
from ._queue import QueueWorker
from ._watchdog import Watchdog
from .endpoint import Endpoint, registry


def _modules_of(spec: Dict[str, Any]) -> List[str]:
    modules: List[str] = [spec.get("module", "")] + [f.get("module", "") for f in spec.get("functions", [])]
    return list(dict.fromkeys(m for m in modules if m))


def _import_endpoint(spec: Dict[str, Any]) -> Endpoint:
    """Import the modules of the endpoint's functions; their decorators register the endpoint."""
    modules = _modules_of(spec)
    for module in modules:
        importlib.import_module(module)
    endpoint = registry.get(spec["name"])
    if endpoint is None:
        raise RuntimeError(f"importing {', '.join(modules)} declared no Endpoint(name={spec['name']!r}); "
                           "rebuild with `svc build`")
    return endpoint


IMPORT_REMEDY = "Import packages inside the endpoint function body, not at file top."
OTHER_REMEDY = "Fix the error at that line: the module's top level runs when the worker starts."


class ImportFailure:
    """Why the endpoint's modules could not be imported, told the same way to jobs, requests and logs."""

    def __init__(self, exc: BaseException, root: str, modules: List[str]) -> None:
        self.error_type = type(exc).__name__
        self.file, self.line = _user_location(exc, root)
        self.remedy = IMPORT_REMEDY if isinstance(exc, ImportError) else OTHER_REMEDY
        where = f" at {self.file}:{self.line}" if self.file else ""
        self.message = (f"{self.error_type}: {exc}{where} (while importing {', '.join(modules)}). {self.remedy}")
        self.traceback = app_traceback(exc, root)

    def error(self) -> Dict[str, Any]:
        """The job-done `error` object (contracts section 4) plus where and what to do."""
        return {"error_type": self.error_type, "error_message": self.message, "error_traceback": self.traceback,
                "file": self.file, "line": self.line, "remedy": self.remedy}


def _user_location(exc: BaseException, root: str):
    """The app's own file and line closest to the error: not the runtime's, not a dependency's."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return os.path.relpath(exc.filename, root), exc.lineno
    found: "tuple[Optional[str], Optional[int]]" = (None, None)
    for frame in traceback.extract_tb(exc.__traceback__):
        rel = os.path.relpath(os.path.abspath(frame.filename), root)
        if rel.startswith(("..", "svc" + os.sep, "site-packages" + os.sep)) or frame.filename.startswith("<"):
            continue
        found = (rel, frame.lineno)
    return found


class FailingRunner:
    """Stands in for JobRunner when the module did not import: every job fails with the import error."""

    def __init__(self, client: WorkerClient, failure: ImportFailure) -> None:
        self.client, self.failure = client, failure

    def run(self, job: Job) -> bool:
        logger.info("job %s: failed: the endpoint's module did not import (%s)", job.id, self.failure.error_type)
        self.client.done(job.id, {"error": self.failure.error()})
        return False


def _report_failure(exc: BaseException, root: str, spec: Dict[str, Any], env: WorkerEnv) -> None:
    failure = ImportFailure(exc, root, _modules_of(spec))
    logger.error("cannot start stock worker %s: %s\n%s", spec.get("file"), failure.message, failure.traceback.rstrip())
    _report(failure, env)


def _report(failure: ImportFailure, env: WorkerEnv) -> None:
    """Tells the embedded platform at once (SVC_ERROR_URL; a platform without it learns from the jobs)."""
    url = os.environ.get("SVC_ERROR_URL")
    if not url:
        return
    try:
        _http.request("POST", url, {"error": failure.error()}, token=env.token, timeout=10)
    except _http.TransportError as err:
        logger.warning("could not report the import error to the platform: %s", err)


def _concurrency(endpoint: Endpoint) -> Optional[Callable[[int], int]]:
    """`Endpoint(concurrency=N)`: N jobs at once on each worker of this endpoint; else the module's
    `concurrency_modifier(current)` (the runpod form, for every endpoint of that module), else one."""
    fixed = endpoint.config.concurrency
    if fixed:
        return lambda _current: fixed
    return getattr(sys.modules.get(endpoint.function.__module__), "concurrency_modifier", None)


def _serve_qb(env: WorkerEnv, spec: Dict[str, Any], endpoint: Optional[Endpoint], loop: LoopThread,
              failure: Optional[ImportFailure]) -> int:
    if not env.take_url or not env.done_url:
        raise RuntimeError("SVC_JOB_TAKE_URL / SVC_JOB_DONE_URL (or SVC_API_BASE and SVC_WORKER_ID) are not set")
    jobs_done_url = os.environ.get("SVC_JOBS_DONE_URL")  # the embedded platform's batch route (docs/platform.md)
    client = BatchingClient(env, jobs_done_url) if jobs_done_url else WorkerClient(env)
    timeout_ms = spec.get("executionTimeoutMs")
    if failure is not None:
        worker = QueueWorker(client, FailingRunner(client, failure), default_timeout_s=None)  # type: ignore[arg-type]
    else:
        if endpoint is None or endpoint.function is None:
            raise RuntimeError(f"endpoint {spec['name']!r} has no queue-based function")
        batch = spec.get("batch")
        if batch:  # Endpoint(..., batch=Batch(...)): one call per batch of jobs (docs/platform.md)
            worker = BatchWorker(client, endpoint.function, loop, batch["maxSize"], batch["maxWaitMs"],  # type: ignore[assignment]
                                 default_timeout_s=timeout_ms / 1000 if timeout_ms else None)
            logger.info("worker %s serving batched endpoint %s (%s, up to %d jobs per call, %g ms wait)", env.worker_id,
                        endpoint.name, endpoint.function.__name__, batch["maxSize"], batch["maxWaitMs"])
        else:
            worker = QueueWorker(client, JobRunner(endpoint.function, client, loop, Watchdog()),
                                 default_timeout_s=timeout_ms / 1000 if timeout_ms else None,
                                 concurrency_modifier=_concurrency(endpoint))
            logger.info("worker %s serving queue-based endpoint %s (%s%s)", env.worker_id, endpoint.name,
                        endpoint.function.__name__, f", {endpoint.config.concurrency} jobs at once" if endpoint.config.concurrency else "")
    signal.signal(signal.SIGTERM, lambda *_: worker.stop())
    return worker.run()


def _serve_lb(env: WorkerEnv, endpoint: Optional[Endpoint], loop: LoopThread, failure: Optional[ImportFailure]) -> int:
    app = UnavailableApp(failure.error()) if failure is not None else LBApp(endpoint, loop)  # type: ignore[arg-type]
    lb_socket = os.environ.get("SVC_LB_SOCKET")  # in the sandbox: its own network, the platform's socket folder
    server = make_unix_server(app, lb_socket) if lb_socket else make_server(app, env.lb_port)

    def stop() -> None:  # shutdown() blocks until serve_forever returns: call it off that thread
        threading.Thread(target=server.shutdown, name="svc-lb-stop", daemon=True).start()

    signal.signal(signal.SIGTERM, lambda *_: stop())
    if env.worker_id and env.ping_url:
        client = WorkerClient(env)
        _heartbeat.start(client, env.ping_interval, lambda: [])
        if env.signals_url:
            _signals.start(client, on_cancel=lambda _id: None, on_stop=stop)
    if endpoint is not None:
        logger.info("worker %s serving load-balanced endpoint %s on %s (%d routes)",
                    env.worker_id, endpoint.name, lb_socket or f"127.0.0.1:{env.lb_port}", len(endpoint.routes))
    try:
        server.serve_forever()
    finally:
        server.server_close()  # waits for requests in flight
    logger.info("worker exiting (code 0)")
    return 0


def _put_app_first_on_path(root: str) -> None:
    """`python handlers/api.py` puts handlers/ first on sys.path, so the user's `api.py` would
    import the handler instead: drop that folder and search the artifact root first."""
    handlers = os.path.dirname(os.path.abspath(sys.argv[0])) if sys.argv and sys.argv[0] else None
    keep = [p for p in sys.path if os.path.abspath(p or ".") not in (handlers, root)]
    sys.path[:] = [root] + keep


def serve(endpoint_name: str) -> None:
    """Run this process as a worker of `endpoint_name` until the platform stops it; exits the process."""
    _log.setup()
    _relay.start()  # before the app's import, which may already call the platform's URL
    cwd = os.getcwd()
    _put_app_first_on_path(cwd)
    manifest = _manifest.load(cwd)
    spec = _manifest.endpoint(manifest, endpoint_name)
    os.environ.setdefault("SVC_ENDPOINT_NAME", endpoint_name)  # before import: decides local vs remote
    env = WorkerEnv.from_environ(endpoint_name)
    if spec.get("runtime") == "runpod":  # a stock hosted-SDK worker: its own SDK is the loop
        sys.exit(_stock_worker.run(spec, cwd, lambda exc: _report_failure(exc, cwd, spec, env)))
    endpoint: Optional[Endpoint] = None
    failure: Optional[ImportFailure] = None
    try:
        endpoint = _import_endpoint(spec)
    except (Exception, SystemExit) as exc:  # SystemExit: a module that calls sys.exit() at its top
        failure = ImportFailure(exc, cwd, _modules_of(spec))
        logger.error("cannot import endpoint %s: %s\n%s", endpoint_name, failure.message, failure.traceback.rstrip())
        logger.error("serving anyway: every job and request fails with this error until a fixed build is deployed")
        _report(failure, env)
    # What import made (the app's modules, its libraries) lives as long as the worker: kept out of
    # the collector's full passes, which would otherwise walk it all and pause a job for ms.
    gc.freeze()
    loop = LoopThread()
    if spec.get("type") == "LB":
        code = _serve_lb(env, endpoint, loop, failure)
    else:
        code = _serve_qb(env, spec, endpoint, loop, failure)
    sys.exit(code)
