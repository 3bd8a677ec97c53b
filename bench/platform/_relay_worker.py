"""The relay's worker (see _relay.ts): svc's own HTTP client and request shape, nothing else.

Each request carries the last result and waits for the next job (svc's `jobs-done?take=1&wait=1`),
over the Unix socket named in SVC_PLATFORM_SOCKET, as a svc worker's requests go.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runtime", "python"))
from svc import _http  # noqa: E402 - the runtime, from this checkout

URL = os.environ["SVC_API_BASE"] + "/jobs-done?take=1&wait=1"

results = b""
while True:
    resp = _http.request_with_retries("POST", URL, data=results, retries=3, timeout=60,
                                      content_type="application/x-ndjson")
    lines = [json.dumps({"id": job["id"], "output": job["input"]}, allow_nan=False) for job in resp.body["next"]]
    results = "\n".join(lines).encode("utf-8")
