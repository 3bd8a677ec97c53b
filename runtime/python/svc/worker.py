"""Worker entry point: `serve(endpoint_name)`, called by the generated `handlers/<endpoint>.py`."""
import importlib
import os
import signal
import sys
import threading
from typing import Any, Dict, List

from . import _heartbeat, _log, _manifest, _signals
from ._env import WorkerEnv
from ._jobs import JobRunner
from ._lb_server import make_server
from ._log import logger
from ._loop import LoopThread
from ._platform import WorkerClient
from ._queue import QueueWorker
from .endpoint import Endpoint, registry


def _import_endpoint(spec: Dict[str, Any]) -> Endpoint:
    """Import the modules of the endpoint's functions; their decorators register the endpoint."""
    modules: List[str] = [spec.get("module", "")] + [f.get("module", "") for f in spec.get("functions", [])]
    for module in dict.fromkeys(m for m in modules if m):
        importlib.import_module(module)
    endpoint = registry.get(spec["name"])
    if endpoint is None:
        raise RuntimeError(f"importing {', '.join(m for m in modules if m)} declared no Endpoint(name={spec['name']!r}); "
                           "rebuild with `svc build`")
    return endpoint


def _serve_qb(env: WorkerEnv, spec: Dict[str, Any], endpoint: Endpoint, loop: LoopThread) -> int:
    if endpoint.function is None:
        raise RuntimeError(f"endpoint {endpoint.name!r} has no queue-based function")
    if not env.take_url or not env.done_url:
        raise RuntimeError("SVC_JOB_TAKE_URL / SVC_JOB_DONE_URL (or SVC_API_BASE and SVC_WORKER_ID) are not set")
    client = WorkerClient(env)
    module = sys.modules.get(endpoint.function.__module__)
    timeout_ms = spec.get("executionTimeoutMs")
    worker = QueueWorker(client, JobRunner(endpoint.function, client, loop),
                         default_timeout_s=timeout_ms / 1000 if timeout_ms else None,
                         concurrency_modifier=getattr(module, "concurrency_modifier", None))
    signal.signal(signal.SIGTERM, lambda *_: worker.stop())
    logger.info("worker %s serving queue-based endpoint %s (%s)", env.worker_id, endpoint.name,
                endpoint.function.__name__)
    return worker.run()


def _serve_lb(env: WorkerEnv, endpoint: Endpoint, loop: LoopThread) -> int:
    server = make_server(endpoint, loop, env.lb_port)

    def stop() -> None:  # shutdown() blocks until serve_forever returns: call it off that thread
        threading.Thread(target=server.shutdown, name="svc-lb-stop", daemon=True).start()

    signal.signal(signal.SIGTERM, lambda *_: stop())
    if env.worker_id and env.ping_url:
        client = WorkerClient(env)
        _heartbeat.start(client, env.ping_interval, lambda: [])
        if env.signals_url:
            _signals.start(client, on_cancel=lambda _id: None, on_stop=stop)
    logger.info("worker %s serving load-balanced endpoint %s on 127.0.0.1:%s (%d routes)",
                env.worker_id, endpoint.name, env.lb_port, len(endpoint.routes))
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
    cwd = os.getcwd()
    _put_app_first_on_path(cwd)
    manifest = _manifest.load(cwd)
    spec = _manifest.endpoint(manifest, endpoint_name)
    os.environ.setdefault("SVC_ENDPOINT_NAME", endpoint_name)  # before import: decides local vs remote
    env = WorkerEnv.from_environ(endpoint_name)
    endpoint = _import_endpoint(spec)
    loop = LoopThread()
    if spec.get("type") == "LB":
        code = _serve_lb(env, endpoint, loop)
    else:
        code = _serve_qb(env, spec, endpoint, loop)
    sys.exit(code)
