"""Handing output files (a generated video, say) to the platform (contracts section 6).

Its modules (pathlib, shutil, mimetypes) are imported by the first call: every worker imports `svc`,
few of them save a file.
"""
import os
import urllib.parse
from typing import TYPE_CHECKING, Optional, Union

from . import _http

if TYPE_CHECKING:
    from pathlib import Path

DEFAULT_OUTPUT_DIR = "outputs"
UPLOAD_TIMEOUT_S = 300


def _file_name(path: "Path", name: Optional[str]) -> str:
    name = name if name is not None else path.name
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        raise ValueError(f"save_output_file: name must be a plain file name, got {name!r}")
    return name


def save_output_file(path: Union[str, "os.PathLike[str]"], content_type: Optional[str] = None,
                     name: Optional[str] = None) -> str:
    """Keep `path` as a job output file and return the URL it can be fetched from.

    In a worker (SVC_WORKER_ID set) the bytes are uploaded to the platform, which serves them to
    holders of the API key for its retention period. Elsewhere the file is copied to
    `$SVC_OUTPUT_DIR` (default `./outputs`; an existing file of that name is replaced) and a
    `file://` URL is returned, so the same code runs in plain unit tests.
    """
    import mimetypes
    import shutil
    from pathlib import Path

    source = Path(path)
    if not source.is_file():
        raise FileNotFoundError(f"save_output_file: no such file: {source}")
    file_name = _file_name(source, name)
    worker_id = os.environ.get("SVC_WORKER_ID")
    if not worker_id:
        target_dir = Path(os.environ.get("SVC_OUTPUT_DIR") or DEFAULT_OUTPUT_DIR)
        target_dir.mkdir(parents=True, exist_ok=True)
        target = target_dir / file_name
        if not (target.exists() and target.resolve() == source.resolve()):
            shutil.copyfile(source, target)
        return target.resolve().as_uri()

    base = os.environ.get("SVC_API_BASE", "").rstrip("/")
    if not base:
        raise RuntimeError("save_output_file: SVC_API_BASE is not set in this worker")
    content_type = content_type or mimetypes.guess_type(file_name)[0] or "application/octet-stream"
    url = f"{base}/v2/_worker/{worker_id}/files?name={urllib.parse.quote(file_name)}"
    resp = _http.request_with_retries("POST", url, data=source.read_bytes(), content_type=content_type,
                                      token=os.environ.get("SVC_WORKER_TOKEN"), timeout=UPLOAD_TIMEOUT_S)
    if resp.status != 200 or not isinstance(resp.body, dict) or "url" not in resp.body:
        raise RuntimeError(f"save_output_file: upload of {file_name} failed: HTTP {resp.status} {resp.text[:200]}")
    return str(resp.body["url"])
