"""The W3C trace context of the job this code runs for (docs/observability.md).

The platform makes the spans; the runtime only carries the `traceparent` it got with the job into
the requests the job makes (cross-endpoint calls, `.spawn`, `.map`), so a callee's job joins its
caller's trace. A context variable: each job's thread, and each async job's task, sees its own.
"""
import contextvars
from typing import Any, Callable, Dict, Optional

current: "contextvars.ContextVar[Optional[str]]" = contextvars.ContextVar("svc_traceparent", default=None)


def add_header(headers: Dict[str, str]) -> None:
    """Adds `traceparent` to an outgoing request's headers when a traced job runs here."""
    traceparent = current.get()
    if traceparent:
        headers["traceparent"] = traceparent


def run_as(traceparent: Optional[str], fn: Callable[[], Any]) -> Any:
    """Runs `fn` with `traceparent` as the current trace context (nothing changes when it is None)."""
    if traceparent is None:
        return fn()
    token = current.set(traceparent)
    try:
        return fn()
    finally:
        current.reset(token)
