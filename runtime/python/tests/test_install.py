"""`pip install runtime/python` gives a venv the `svc` module: stdlib only, typed (py.typed).

A real venv and a real pip install of a copy of the package folder (so no build output lands in the
repository). The build backend (setuptools + wheel) comes from the venv when it has both, else from
PyPI; with neither, the test is skipped and says so.
"""
import os
import shutil
import subprocess
import sys
import urllib.request
import venv
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]


def pypi_reachable():
    try:
        urllib.request.urlopen(urllib.request.Request("https://pypi.org/simple/setuptools/", method="HEAD"), timeout=5)
        return True
    except OSError:
        return False


def run(*args, cwd=None):
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True, timeout=300).stdout


def test_pip_install_gives_the_svc_module(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
    venv.create(tmp_path / "venv", with_pip=True)
    python = str(tmp_path / "venv" / ("Scripts" if os.name == "nt" else "bin") / "python")
    has_backend = subprocess.run([python, "-c", "import setuptools, wheel"], capture_output=True).returncode == 0
    if not has_backend and not pypi_reachable():
        pytest.skip("no setuptools + wheel in the venv and PyPI did not answer: cannot build the package")
    isolation = ["--no-build-isolation"] if has_backend else []
    before = sorted(str(p.relative_to(source)) for p in source.rglob("*"))
    run(python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", *isolation, str(source))
    # The folder installed from (node_modules/@svc-dev/svc/runtime/python for a user) is left as it was: no build/, no egg-info.
    assert sorted(str(p.relative_to(source)) for p in source.rglob("*")) == before

    # Imported from elsewhere, the installed copy answers (not the repository's folder).
    out = run(python, "-c", "import svc, pathlib; from svc import Endpoint, GpuGroup;"
              "print(pathlib.Path(svc.__file__).parent); print(svc.__version__); print(GpuGroup.ADA_24)", cwd=tmp_path)
    location, version, gpu = out.split()
    assert "site-packages" in location
    assert version == run(sys.executable, "-c", "import svc; print(svc.__version__)", cwd=PACKAGE).strip()
    assert gpu == "ADA_24"
    assert (Path(location) / "py.typed").exists()
    assert (Path(location) / "_schema.py").exists()
    # No dependencies: pip reports none.
    assert "Requires: \n" in run(python, "-m", "pip", "show", "svc-sdk") + "\n"
    # A user's unit test can call an endpoint function directly.
    out = run(python, "-c", "from svc import Endpoint\n"
              "@Endpoint(name='sq', cpu='cpu3c-2-4')\ndef sq(x: int) -> int:\n    return x * x\nprint(sq(7))", cwd=tmp_path)
    assert out.strip() == "49"
