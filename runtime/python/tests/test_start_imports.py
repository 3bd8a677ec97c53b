"""What a worker's interpreter imports at its start: the runtime imports the standard library's
heavier packages only where they are used (issue 42: a third of a worker's start went to modules
most workers never use)."""
import json
import os
import subprocess
import sys

RUNTIME = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Each is imported by the first call that needs it: a coroutine (asyncio), HTTPS or a proxy
# (http.client, ssl, urllib.request, the email package), a schedule's time zone, a saved file.
LATER = ["asyncio", "http.client", "ssl", "urllib.request", "email", "zoneinfo", "pathlib", "shutil", "mimetypes", "tempfile"]


def test_importing_the_worker_leaves_the_heavier_modules_for_their_first_use():
    code = f"import sys, svc.worker; print(__import__('json').dumps([m for m in {LATER!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-s", "-S", "-c", code], cwd=RUNTIME, capture_output=True, text=True, check=True,
                         env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": RUNTIME})
    assert json.loads(out.stdout) == []
