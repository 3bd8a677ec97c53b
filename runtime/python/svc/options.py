"""`Cron`, `Batch` and `Retries`: the values of `Endpoint(schedule=...)`, `batch=...` and `retries=...`.

The build reads them from the source without running it (plugins/discover-python), so their
arguments must be literals or module-level constants; the rules are core/endpoint-schema.ts's.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from . import _schema as schema


@dataclass(frozen=True)
class Cron:
    """Run the endpoint's function on a schedule: `Cron("0 3 * * *", timezone="Europe/Paris", input={...})`.

    Five fields (minute hour day-of-month month day-of-week), or six with a leading seconds field;
    `timezone` an IANA name (default UTC); `input` the job input of every run (default {}).
    """

    cron: str
    timezone: str = schema.DEFAULT_SCHEDULE_TIME_ZONE
    input: Optional[Dict[str, Any]] = field(default=None)


@dataclass(frozen=True)
class Batch:
    """Hand the function a list of up to `max_size` inputs, waiting at most `max_wait_ms` to fill it.

    The function takes one parameter (the list of inputs, each a dict as a job's input) and returns
    a list of as many results, in the same order; an item that is an Exception fails its job only.
    """

    max_size: int
    max_wait_ms: float = schema.DEFAULT_BATCH_MAX_WAIT_MS


@dataclass(frozen=True)
class Retries:
    """`Endpoint(..., retries=Retries(max_retries=3, backoff=2.0, initial_delay=1.0))`: a job whose
    function raised runs again up to `max_retries` times, the k-th retry `initial_delay` ×
    `backoff`^(k-1) seconds later, before it FAILs; INPUT_INVALID is never retried. `retries=3` is
    `Retries(max_retries=3)`. The platform runs the retries (docs/platform.md, "Retries")."""

    max_retries: int
    backoff: float = schema.DEFAULT_RETRY_BACKOFF
    initial_delay: float = schema.DEFAULT_RETRY_INITIAL_DELAY_S
