"""Calls that respect the platform's limits: `.remote`, `.spawn`, `.map` and cross-endpoint calls.

The platform limits requests per endpoint (the hosted one: 2,000 runsync per 10 s, 400 at once)
and answers 429 over the limit, 503 while it cannot take work, with `Retry-After` saying when to
come back. A caller that fails the item then loses work it could have done a moment later, so:

- 429 is never an item's failure: every call to that endpoint waits until the `Retry-After` time
  (else a backoff that doubles, 0.5 s up to 10 s, per endpoint), then sends again. The whole
  endpoint waits, not only the call that was refused: 32 slots of a `.map` that each came back on
  their own would keep the limit full of refusals.
- 502, 503, 504 and a platform that refuses connections (restarting) are momentary: the call is
  sent again after the same waits, for up to MOMENTARY_S in a row; after that the answer (or the
  transport error) is the call's.
- A request that may have reached the platform (a reset or a timeout after sending) is not sent
  again unless it is safe to repeat (`idempotent`, a GET): a second `/runsync` would run the job twice.

Logic only; the requests are the caller's (`send(attempt)`).
"""
import random
import threading
import time
from typing import Callable, Dict, Optional

from . import _http

RETRY_STATUSES = (429, 502, 503, 504)
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 10.0
MAX_RETRY_AFTER_S = 120.0  # a Retry-After longer than this is read as this
MOMENTARY_S = 60.0  # 5xx / refused connections retried this long in a row before the call fails
JITTER = 0.2  # waits are stretched by up to this fraction, so that waiting calls do not return at once


def retry_after_s(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        import email.utils  # an HTTP date is rare here; the email package is not worth every worker's start

        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


class Gate:
    """One endpoint's pause: after a 429 no call to it is sent before `open_at`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.open_at = 0.0
        self.backoff = FIRST_BACKOFF_S

    def wait(self) -> None:
        while True:
            with self._lock:
                delay = self.open_at - time.monotonic()
            if delay <= 0:
                return
            time.sleep(delay * (1 + random.random() * JITTER))

    def close_for(self, told: Optional[float]) -> None:
        """Pauses the endpoint for `told` seconds (its Retry-After), else the next backoff."""
        with self._lock:
            if told is None:
                told, self.backoff = self.backoff, min(self.backoff * 2, MAX_BACKOFF_S)
            self.open_at = max(self.open_at, time.monotonic() + told)

    def passed(self) -> None:
        if self.backoff != FIRST_BACKOFF_S:
            with self._lock:
                self.backoff = FIRST_BACKOFF_S


_gates: Dict[str, Gate] = {}
_gates_lock = threading.Lock()


def gate_for(endpoint_url: str) -> Gate:
    with _gates_lock:
        gate = _gates.get(endpoint_url)
        if gate is None:
            gate = _gates[endpoint_url] = Gate()
        return gate


def _not_sent(err: _http.TransportError) -> bool:
    """True when the request surely did not reach the server (the connection was refused)."""
    cause = err.__cause__
    cause = getattr(cause, "reason", cause)  # urllib wraps it in URLError
    return isinstance(cause, ConnectionRefusedError)


def send(endpoint_url: str, attempt: Callable[[], _http.Response], idempotent: bool = False) -> _http.Response:
    """`attempt()` (one request to the endpoint at `endpoint_url`), again while the platform says "later"."""
    gate = gate_for(endpoint_url)
    trouble_since: Optional[float] = None
    own_backoff = FIRST_BACKOFF_S
    failure: Optional[_http.TransportError] = None
    while True:
        gate.wait()
        try:
            resp: Optional[_http.Response] = attempt()
        except _http.TransportError as err:
            if not (idempotent or _not_sent(err)):
                raise
            resp, failure = None, err
        if resp is not None and resp.status not in RETRY_STATUSES:
            gate.passed()
            return resp
        told = retry_after_s(resp.retry_after) if resp is not None else None
        if resp is not None and resp.status == 429:
            gate.close_for(told)  # never the item's failure: wait as long as the platform says
            continue
        now = time.monotonic()
        trouble_since = now if trouble_since is None else trouble_since
        if now - trouble_since >= MOMENTARY_S:
            if resp is not None:
                return resp
            assert failure is not None  # no answer: a transport failure
            raise failure
        if told is not None:
            gate.close_for(told)
        else:
            time.sleep(own_backoff * (1 + random.random() * JITTER))
            own_backoff = min(own_backoff * 2, MAX_BACKOFF_S)
