"""Where `.map`'s calls run (fanout.py decides which and in what order).

`ThreadLane`: each call blocking on a thread of its own (any function, any endpoint). `FastLane`: a
QB endpoint's first /runsync of each item, written and read by the caller's own thread over kept-alive
connections it watches with one selector. 32 threads each blocked on a socket cost the caller a
wake-up and a hand-over of the interpreter lock per item, which capped `.map` at about 60 % of what
the platform answers; one thread reading 32 sockets does not. An answer that does not end the call
(the job still runs, 429, a momentary 5xx) is carried on by the thread lane, as `.remote` would go on.

Both hand back `(index, payload, (ok, value))` from `wait`; `in_flight` counts the calls of both.
"""
import contextvars
import queue
import selectors
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _http

Outcome = Tuple[bool, Any]
Done = Tuple[int, Any, Outcome]


class ThreadLane:
    """Blocking calls on at most `size` threads, started as needed; each runs in the caller's context."""

    def __init__(self, size: int, call: Callable[[Any], Any], wake: Callable[[], None] = lambda: None) -> None:
        self.size, self.call, self.wake = size, call, wake
        self.tasks: "queue.SimpleQueue[Optional[Tuple[int, Any, Callable[[], Any]]]]" = queue.SimpleQueue()
        self.done: "queue.SimpleQueue[Done]" = queue.SimpleQueue()
        self.threads: List[threading.Thread] = []
        self.in_flight = 0

    def submit(self, index: int, payload: Any, job: Optional[Callable[[], Any]] = None) -> None:
        """Runs `job` (by default the call of `payload`) on a thread."""
        self.in_flight += 1
        self.tasks.put((index, payload, job or (lambda: self.call(payload))))
        if len(self.threads) < min(self.size, self.in_flight):
            thread = threading.Thread(target=contextvars.copy_context().run, args=(self._work,), name=f"svc-map-{len(self.threads)}", daemon=True)
            self.threads.append(thread)
            thread.start()

    def _work(self) -> None:
        while True:
            task = self.tasks.get()
            if task is None:
                return
            index, payload, job = task
            try:
                outcome: Outcome = (True, job())
            except Exception as err:  # noqa: BLE001 - every failure is the item's (fanout.py names it)
                outcome = (False, err)
            self.done.put((index, payload, outcome))
            self.wake()

    def wait(self, block_s: float = 0.0) -> List[Done]:
        """The calls that ended (waiting up to `block_s` for one)."""
        out: List[Done] = []
        try:
            out.append(self.done.get(timeout=block_s) if block_s > 0 else self.done.get_nowait())
            while True:
                out.append(self.done.get_nowait())
        except queue.Empty:
            pass
        self.in_flight -= len(out)
        return out

    def close(self) -> None:
        for _ in self.threads:
            self.tasks.put(None)


class _Conn:
    __slots__ = ("plain", "buf", "index", "payload", "sent_at", "served")

    def __init__(self, plain: Any) -> None:
        self.plain, self.buf, self.served = plain, b"", 0
        self.index: Optional[int] = None
        self.payload: Any = None
        self.sent_at = 0.0


class FastLane:
    """A QB endpoint's /runsync calls from this thread (lane: remote.RunsyncLane); the rest to `threads`."""

    def __init__(self, lane: Any, size: int, call: Callable[[Any], Any], timeout_s: float) -> None:
        self.lane, self.timeout_s = lane, timeout_s
        self.selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self.selector.register(self._wake_r, selectors.EVENT_READ, None)
        self.threads = ThreadLane(size, call, self._wake)
        self.idle: List[_Conn] = []
        self.busy: Dict[int, _Conn] = {}  # by socket fd
        self.broken = False  # the platform could not be reached on a fresh connection: threads from now on

    @property
    def in_flight(self) -> int:
        return len(self.busy) + self.threads.in_flight

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass  # the pipe is full: the lane wakes anyway

    def submit(self, index: int, payload: Any) -> None:
        """Sends the call's runsync; to the threads while the endpoint is paused or cannot be reached."""
        if self.broken or self.lane.gate.open_at > time.monotonic():  # paused after a 429: the threads wait for it
            self.threads.submit(index, payload)
            return
        conn = self.idle.pop() if self.idle else None
        try:
            self._send(conn, index, payload)
        except OSError:
            self.broken = True
            self.threads.submit(index, payload)

    def _send(self, conn: Optional[_Conn], index: int, payload: Any) -> None:
        target, headers, body = self.lane.request(payload)
        if conn is not None:
            try:
                conn.plain.request("POST", target, body, headers)
            except OSError:  # the server closed it while idle: a fresh one
                self._drop(conn)
                conn = None
        if conn is None:
            conn = _Conn(_http.open_plain(self.lane.key, self.timeout_s))
            conn.plain.request("POST", target, body, headers)
            self.selector.register(conn.plain.sock, selectors.EVENT_READ, conn)
        conn.index, conn.payload, conn.sent_at = index, payload, time.monotonic()
        self.busy[conn.plain.sock.fileno()] = conn

    def _drop(self, conn: _Conn) -> None:
        if conn.plain.sock is not None:
            self.busy.pop(conn.plain.sock.fileno(), None)
            self.selector.unregister(conn.plain.sock)
        conn.plain.close()

    def wait(self, block_s: float) -> List[Done]:
        out = self.threads.wait()
        events = [] if out else self.selector.select(block_s)
        for key, _ in events:
            conn = key.data
            if conn is None:
                try:
                    while self._wake_r.recv(4096):
                        pass
                except BlockingIOError:
                    pass
            elif conn.index is None:  # an idle connection the server closed (or wrote to): not ours to keep
                self.idle.remove(conn)
                self._drop(conn)
            else:
                self._read(conn, out)
        self._time_out(out)
        out.extend(self.threads.wait())
        return out

    def _read(self, conn: _Conn, out: List[Done]) -> None:
        try:
            chunk = conn.plain.sock.recv(65536)
        except OSError:
            chunk = b""
        conn.buf += chunk
        try:
            parsed = _http.parse_answer(conn.buf, "POST", eof=not chunk) if conn.buf else None
        except _http.NotAnAnswer as err:  # not an HTTP answer: as the blocking path, the item's transport error
            self._lost(conn, out, reused=False, why=f"the platform's answer is not HTTP ({err!r})")
            return
        if parsed is None:
            if not chunk:  # closed without a (whole) answer
                self._lost(conn, out, reused=conn.served > 0 and not conn.buf)
            return
        answer, used = parsed
        conn.buf, conn.served = conn.buf[used:], conn.served + 1
        index, payload = conn.index, conn.payload
        self.busy.pop(conn.plain.sock.fileno(), None)
        conn.index = conn.payload = None
        if chunk and answer.headers.get("connection", "").lower() != "close":
            self.idle.append(conn)
        else:
            self.selector.unregister(conn.plain.sock)
            conn.plain.close()
        resp = _http.response_of(answer.status, answer.body, _http.retry_after_of(answer))
        settled = self.lane.outcome(resp)
        if settled is not None:
            out.append((index, payload, settled))
        else:
            self.threads.submit(index, payload, lambda: self.lane.carry_on(payload, resp))

    def _lost(self, conn: _Conn, out: List[Done], reused: bool, why: str = "the platform closed the connection without an answer") -> None:
        index, payload = conn.index, conn.payload
        self._drop(conn)
        if reused:  # a kept-alive connection the server closed before reading: once more, as _http._send does
            self.threads.submit(index, payload, lambda: self.lane.carry_on(payload, None))
        else:  # it may have run: sending it again could run it twice
            out.append((index, payload, (False, self.lane.unreachable(why))))

    def _time_out(self, out: List[Done]) -> None:
        late = time.monotonic() - self.timeout_s
        for conn in [c for c in self.busy.values() if c.sent_at < late]:
            index, payload = conn.index, conn.payload
            self._drop(conn)
            out.append((index, payload, (False, self.lane.unreachable(f"no answer in {self.timeout_s:.0f} s"))))

    def close(self) -> None:
        self.threads.close()
        for conn in self.idle + list(self.busy.values()):
            conn.plain.close()
        self.selector.close()
        self._wake_r.close()
        self._wake_w.close()
