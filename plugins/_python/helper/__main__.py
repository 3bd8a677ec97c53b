"""The helper's protocol: `python3 plugins/_python/helper [--serve]`.

Protocol (JSON, UTF-8):
  request  {"files": [{"path": "a/b.py", "source": "<base64 of the file's bytes>"}]}
  response {"results": [{"path": ..., "functions": [...], "endpoints": [...], "imports": [...]} |
                        {"path": ..., "error": {"code", "line", "message", ...}}]}
  Each function carries its parameters ("params": name, kind, annotation, default or
  defaultSource, required) and "returns" (the return annotation as written). "imports" lists the
  imports that run when the module is imported (module level, not under `if TYPE_CHECKING:` nor in
  a `try:` that catches ImportError): {"module", "names", "level", "line"}.

Every response names the interpreter that answered it, "executable": sys.executable (the real one
behind a pyenv shim). A request with "stdlib": true is also answered "stdlib": {"version": "3.11", "modules": [...]}, the
interpreter's standard library (sys.stdlib_module_names). A request with "requirements": [lines] is
also answered "requirements": [parsed or null], each line read by pip's vendored `packaging`. A request
with "stockWorkers": [{"path", "source"}] is also answered "stockWorkers": [{"path", "start"} | {"path",
"error"}]: where each file calls the hosted SDK's `runpod.serverless.start(...)` when run (stock_worker.py).

One-shot mode (default): one request on stdin, one response on stdout.
Long-lived mode (`--serve`): one request per line on stdin, one response per line on stdout,
until stdin closes. A request that cannot be read answers {"fatal": "<message>"}.
"""
import json
import os
import sys

if not __package__:
    # Started as `python3 <this folder>`, which puts the folder itself first on sys.path: put its
    # parent there instead, so the modules are the package `helper` and no module name of ours
    # (imports, requirements, ...) shadows a top-level one.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from helper.endpoints import handle_file  # noqa: E402
from helper.imports import stdlib_modules  # noqa: E402
from helper.requirements import parse_requirement  # noqa: E402
from helper.stock_worker import find_start  # noqa: E402


def handle(request):
    response = {"results": [handle_file(item) for item in request.get("files", [])], "executable": sys.executable}
    if request.get("stdlib"):
        response["stdlib"] = {"version": "%d.%d" % sys.version_info[:2], "modules": stdlib_modules()}
    if "requirements" in request:
        response["requirements"] = [parse_requirement(line) for line in request["requirements"]]
    if "stockWorkers" in request:
        response["stockWorkers"] = [find_start(item) for item in request["stockWorkers"]]
    return response


def main(argv):
    if "--serve" in argv:
        for raw in sys.stdin.buffer:
            if not raw.strip():
                continue
            try:
                response = handle(json.loads(raw.decode("utf-8")))
            except Exception as error:  # keep serving: one bad request must not kill the dev server's helper
                response = {"fatal": "%s: %s" % (type(error).__name__, error)}
            sys.stdout.write(json.dumps(response) + "\n")
            sys.stdout.flush()
        return 0
    try:
        response = handle(json.loads(sys.stdin.buffer.read().decode("utf-8")))
    except Exception as error:
        response = {"fatal": "%s: %s" % (type(error).__name__, error)}
    sys.stdout.write(json.dumps(response) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
