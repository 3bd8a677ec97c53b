import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(APP))
# The example's requirements (PyAV) go where a deploy would put them: beside the code, installed
# once from PyPI into the example's ignored .svc folder (CI has PyPI; the worker gets the artifact).
DEPS = os.path.join(APP, ".svc", "test-deps")


def _ensure_requirements():
    try:
        import av  # noqa: F401
        return
    except ImportError:
        pass
    if not os.path.isdir(os.path.join(DEPS, "av")):
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "--target", DEPS, "-r", os.path.join(APP, "requirements.txt")], check=True)
    sys.path.insert(0, DEPS)


for p in (APP, os.path.join(REPO, "runtime", "python"), HERE):
    if p not in sys.path:
        sys.path.insert(0, p)
_ensure_requirements()
