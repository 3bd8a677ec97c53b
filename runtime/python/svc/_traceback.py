"""A failed job's traceback as its reader wants it: the last frames, the app's own code marked.

Python's own format starts with the runtime's frames (the worker loop that called the function) and
leaves the reader to find which lines are theirs. Here the runtime's frames are left out, only the
last MAX_FRAMES of the rest are kept, and each frame in the app's folder (the worker's working
folder, /app where it is deployed) starts with `>` while a library's or the stdlib's starts with a
space. Chained exceptions (`raise ... from`, an error while handling another) are told the same way,
the earliest first, as Python does. The job's `error_traceback`, the worker log and /status carry it.
"""
import os
import traceback
from typing import List, Optional

MAX_FRAMES = 8
MAX_CHAIN = 3
APP_MARK = ">"
RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
HEADER = f"Traceback (most recent call last; {APP_MARK} marks the app's own code):"


def is_app_file(filename: str, root: str) -> bool:
    """A file of the app itself: under `root`, not the runtime's, not an installed package's."""
    if filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    rel = os.path.relpath(path, root)
    if rel.startswith("..") or path.startswith(RUNTIME_DIR + os.sep):
        return False
    return not any(part in ("site-packages", "dist-packages") for part in rel.split(os.sep))


def _frames(tb: traceback.TracebackException, root: str) -> List[str]:
    kept = [f for f in tb.stack if not os.path.abspath(f.filename).startswith(RUNTIME_DIR + os.sep)]
    lines: List[str] = []
    if len(kept) > MAX_FRAMES:
        lines.append(f"  ... {len(kept) - MAX_FRAMES} earlier frame(s) left out")
        kept = kept[-MAX_FRAMES:]
    for frame in kept:
        app = is_app_file(frame.filename, root)
        shown = os.path.relpath(frame.filename, root) if app else frame.filename
        lines.append(f"{APP_MARK if app else ' '} {shown}:{frame.lineno} in {frame.name}")
        if frame.line:
            lines.append(f"      {frame.line.strip()}")
    return lines


def _one(tb: traceback.TracebackException, root: str) -> List[str]:
    return [HEADER, *_frames(tb, root), *(line.rstrip("\n") for line in tb.format_exception_only())]


def app_traceback(exc: BaseException, root: Optional[str] = None) -> str:
    """`exc`'s traceback, trimmed and marked (module docstring); root defaults to the working folder."""
    root = os.path.abspath(root or os.getcwd())
    chain: List[traceback.TracebackException] = []
    links: List[str] = []
    tb: Optional[traceback.TracebackException] = traceback.TracebackException.from_exception(exc)
    while tb is not None and len(chain) < MAX_CHAIN:
        chain.append(tb)
        if tb.__cause__ is not None:
            links.append("The above exception was the direct cause of the following exception:")
            tb = tb.__cause__
        elif tb.__context__ is not None and not tb.__suppress_context__:
            links.append("During handling of the above exception, another exception occurred:")
            tb = tb.__context__
        else:
            tb = None
    out: List[str] = []
    for i, part in enumerate(reversed(chain)):
        if i > 0:
            out += ["", links[len(chain) - 1 - i], ""]
        out += _one(part, root)
    return "\n".join(out) + "\n"
