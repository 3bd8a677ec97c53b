"""A stock hosted-SDK worker (manifest `runtime: "runpod"`): the user's file runs unmodified, as `python
handler.py` would run it, and its own `runpod.serverless.start(...)` is the worker loop. The platform
gave this process the variables that SDK reads (RUNPOD_WEBHOOK_GET_JOB, ... : docs/deploy.md, "Stock
workers"); svc adds only what the sandbox needs (the relay to the platform, started by serve()) and
reports a file that fails before the SDK starts, as it does for an @Endpoint module.
"""
import os
import runpy
import sys
from typing import Any, Callable, Dict


def run(spec: Dict[str, Any], root: str, report: Callable[[BaseException], None]) -> int:
    """Runs the stock worker's file as `__main__`; answers the exit code once the SDK's loop returns."""
    path = os.path.join(root, spec["file"])
    sys.argv = [path]  # the SDK reads its own flags (--rp_log_level, ...) from argv
    folder = os.path.dirname(path)
    sys.path[:] = [folder] + [p for p in sys.path if p != folder]  # as `python src/handler.py` puts src/ first
    try:
        runpy.run_path(path, run_name="__main__")
    except Exception as exc:  # the file's top level failed (a missing package, a bad import): jobs say why
        report(exc)
        return 1
    return 0
