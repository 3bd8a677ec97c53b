"""The build's `svc_manifest.json`, read once per process from the worker's directory."""
import json
import os
import threading
from typing import Any, Dict, Optional

MANIFEST_FILE = "svc_manifest.json"

_lock = threading.Lock()
_cached: Optional[Dict[str, Any]] = None


def load(directory: Optional[str] = None) -> Dict[str, Any]:
    """Return the manifest, reading it on first use.

    Cached so that a later `os.chdir` in user code cannot hide it and so that cross-endpoint
    calls do not re-read the file on every call.
    """
    global _cached
    with _lock:
        if _cached is None or directory is not None:
            path = os.path.join(directory or os.getcwd(), MANIFEST_FILE)
            if directory is None and not os.path.exists(path):  # outside a worker: the project's last build (.svc/)
                built = os.path.join(os.getcwd(), ".svc", MANIFEST_FILE)
                path = built if os.path.exists(built) else path
            try:
                with open(path, encoding="utf-8") as handle:
                    _cached = json.load(handle)
            except FileNotFoundError:
                raise RuntimeError(f"{path} not found: svc workers run in the unpacked build artifact "
                                   "(run `svc build` to produce one)") from None
        return _cached


def endpoint(manifest: Dict[str, Any], name: str) -> Dict[str, Any]:
    try:
        return manifest["endpoints"][name]
    except KeyError:
        known = ", ".join(sorted(manifest.get("endpoints", {}))) or "none"
        raise RuntimeError(f"endpoint {name!r} is not in {MANIFEST_FILE} (endpoints: {known})") from None


def owner_of(function_name: str, default: str) -> str:
    """The endpoint a function belongs to, per the manifest's `functions` registry."""
    try:
        return load().get("functions", {}).get(function_name, default)
    except RuntimeError:
        return default
