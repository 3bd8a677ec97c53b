"""The build backend of `pip install runtime/python`: setuptools', run on a copy of this folder.

setuptools builds in the folder it is given and leaves `build/` and `svc_sdk.egg-info` there; the
folder a user installs from is node_modules/@svc-dev/svc/runtime/python, inside the package npm
installed. So the steps that write (metadata, wheel, sdist) run in a temporary copy and only their
result comes back. An editable install (`pip install -e`) builds here, as setuptools does.
"""
import os
import shutil
import tempfile
from typing import Any, Callable

from setuptools import build_meta as _setuptools

_LEFT_OUT = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "tests")


def _in_a_copy(step: Callable[..., Any]) -> Callable[..., Any]:
    def run(directory: str, *args: Any, **kwargs: Any) -> Any:
        here = os.getcwd()
        with tempfile.TemporaryDirectory(prefix="svc-sdk-build-") as scratch:
            copy = os.path.join(scratch, "src")
            shutil.copytree(here, copy, ignore=_LEFT_OUT)
            os.chdir(copy)
            try:
                return step(os.path.abspath(os.path.join(here, directory)), *args, **kwargs)
            finally:
                os.chdir(here)
    return run


def _requires_in_a_copy(step: Callable[..., Any]) -> Callable[..., Any]:
    return lambda config_settings=None: _in_a_copy(lambda _directory: step(config_settings))(".")


build_wheel = _in_a_copy(_setuptools.build_wheel)
build_sdist = _in_a_copy(_setuptools.build_sdist)
prepare_metadata_for_build_wheel = _in_a_copy(_setuptools.prepare_metadata_for_build_wheel)
get_requires_for_build_wheel = _requires_in_a_copy(_setuptools.get_requires_for_build_wheel)
get_requires_for_build_sdist = _requires_in_a_copy(_setuptools.get_requires_for_build_sdist)
if hasattr(_setuptools, "build_editable"):  # setuptools 64 and later (PEP 660)
    build_editable = _setuptools.build_editable
    get_requires_for_build_editable = _setuptools.get_requires_for_build_editable
    prepare_metadata_for_build_editable = _setuptools.prepare_metadata_for_build_editable
