"""Where a caller outside the workers finds the platform, its key and the deployed endpoints.

The same places the CLI looks (docs/deploy.md, "Fan-out"), first found wins:

1. `PLATFORM_API_URL` (with `PLATFORM_API_KEY`): that platform, asked for the app's endpoints.
2. The deploy state `svc deploy` wrote, `.svc/deployments/<env>.json` in the current folder
   (`SVC_ENV`, else the newest): its platform and its endpoints' URLs.
3. The embedded platform running from the state folder (`SVC_PLATFORM_DIR`, else ~/.svc/platform;
   its `platform.json`), asked for the app's endpoints.

The key is `PLATFORM_API_KEY`, else the state folder's `api-key` when the platform is the embedded
one there (its running address, or loopback), as the CLI uses it. What was tried is kept so that a
caller that found nothing can say where it looked and what to export.
"""
import json
import os
import threading
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

DEPLOY_STATE_DIR = os.path.join(".svc", "deployments")
API_KEY_FILE = "api-key"
STATE_FILE = "platform.json"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass
class Located:
    url: Optional[str] = None  # the platform's API URL
    key: Optional[str] = None
    urls: Optional[Dict[str, str]] = None  # endpoint name -> URL from the deploy state; None: ask the platform
    source: str = ""
    tried: List[str] = field(default_factory=list)

    def advice(self) -> str:
        """Where it looked and what to do, for an error message."""
        looked = "; ".join(self.tried) or "nothing"
        return (f"looked at: {looked}. Run it from the project folder `svc deploy` ran in (it reads "
                f"{DEPLOY_STATE_DIR}/<env>.json), or export PLATFORM_API_URL and PLATFORM_API_KEY "
                "(the platform's URL and key `svc deploy` used; the embedded platform's key is in its state folder's api-key)")


def state_dir() -> str:
    return os.path.abspath(os.environ.get("SVC_PLATFORM_DIR") or os.path.join(os.path.expanduser("~"), ".svc", "platform"))


def _read_json(path: str) -> Optional[Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _read_text(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def deploy_state(directory: Optional[str] = None) -> Tuple[str, Optional[Dict[str, Any]]]:
    """(where it looked, the state of SVC_ENV's deploy or else the newest one, or None)."""
    folder = os.path.join(directory or os.getcwd(), DEPLOY_STATE_DIR)
    wanted = os.environ.get("SVC_ENV")
    names = [f"{wanted}.json"] if wanted else sorted(n for n in _listdir(folder) if n.endswith(".json"))
    states = [(os.path.join(folder, n), s) for n, s in ((n, _read_json(os.path.join(folder, n))) for n in names) if _is_state(s)]
    if not states:
        return (os.path.join(folder, names[0]) if wanted else folder), None
    return max(states, key=lambda found: str(found[1].get("deployedAt", "")))


def _listdir(folder: str) -> List[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _is_state(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("platform"), str) and isinstance(value.get("urls"), dict)


def _is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    return host in _LOOPBACK or host.endswith(".localhost")


def _same(a: Optional[str], b: Optional[str]) -> bool:
    return bool(a and b) and a.rstrip("/") == b.rstrip("/")  # type: ignore[union-attr]


def locate() -> Located:
    found = Located()
    env_url = os.environ.get("PLATFORM_API_URL") or os.environ.get("SVC_API_BASE")
    env_key = os.environ.get("PLATFORM_API_KEY")
    folder = state_dir()
    running = _read_json(os.path.join(folder, STATE_FILE))
    embedded_url = running.get("url") if isinstance(running, dict) and isinstance(running.get("url"), str) else None
    embedded_key = _read_text(os.path.join(folder, API_KEY_FILE))

    def key_for(url: str) -> Optional[str]:
        if env_key:
            return env_key
        if embedded_key and (_same(url, embedded_url) or _is_loopback(url)):
            return embedded_key
        return None

    if env_url:
        found.url, found.key, found.source = env_url.rstrip("/"), key_for(env_url), "PLATFORM_API_URL"
        if not found.key:
            found.tried.append(f"PLATFORM_API_URL={env_url} without PLATFORM_API_KEY (and no key for it in {folder})")
        return found
    found.tried.append("PLATFORM_API_URL (unset)")
    where, state = deploy_state()
    if state is not None:
        found.url, found.urls, found.source = state["platform"].rstrip("/"), dict(state["urls"]), where
        found.key = key_for(state["platform"])
        if not found.key:
            found.tried.append(f"{where}: platform {state['platform']}, but PLATFORM_API_KEY is unset")
        return found
    found.tried.append(f"{where} (no deploy state)")
    if embedded_url:
        found.url, found.key, found.source = embedded_url.rstrip("/"), env_key or embedded_key, os.path.join(folder, STATE_FILE)
        if not found.key:
            found.tried.append(f"the embedded platform at {embedded_url}, but no key (PLATFORM_API_KEY, {os.path.join(folder, API_KEY_FILE)})")
        return found
    found.tried.append(f"the embedded platform's state folder {folder} (not running: no {STATE_FILE})")
    return found


_lock = threading.Lock()
_located: Optional[Located] = None


def located() -> Located:
    """`locate()`, once per process."""
    global _located
    with _lock:
        if _located is None:
            _located = locate()
        return _located


def forget() -> None:
    """Looks again at the next call (after a deploy, or in tests)."""
    global _located
    with _lock:
        _located = None
