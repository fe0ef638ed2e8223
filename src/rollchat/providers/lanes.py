"""Requests to one server, at most N at once (1 for a local or OpenAI-compatible server): the
chat's requests go first; side requests (summaries, memory extraction) wait behind them and
give way to them, their stream cut and started again once the chat's answer is done."""

# Why cut a side request rather than wait for it: a local server with one slot (llama.cpp
# -np 1) makes the chat's request wait until the side request's answer ends (29.8 s measured),
# and with several slots on one shared KV cache the overlap fails the chat's request outright.
# Why wait after the cut: llama.cpp goes on with a prompt whose client hung up until the
# prompt is processed (about 20 s measured, issue 40), so the next request waits until the
# server's /slots shows no slot processing (bounded; a server without /slots: not at all).
# Why hold side requests: a chat request that failed (a busy server) is retried after a
# backoff, and the user typing is about to send one: a side request started then would be
# in the way again.

from __future__ import annotations

import contextlib
import importlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from rollchat.interrupts import start_worker
from rollchat.providers.base import ProviderError, ProviderTimeoutError, Purpose
from rollchat.providers.window_probe import fetch_json, server_root

# who goes first: someone waits for the chat's request (and the restoration's); a summary
# may be what the user waits for (a compaction, the exit); memory extraction never is
RANKS: dict[Purpose, int] = {"chat": 0, "restore": 0, "summary": 1, "memory": 2}
FOREGROUND: frozenset[Purpose] = frozenset(p for p, rank in RANKS.items() if rank == 0)
_OFFICIAL_HOSTS = ("api.openai.com", "api.anthropic.com")
QUIET_SECONDS = 3.0  # the user typed within this: no side request starts
HOLD_SECONDS = 30.0  # a chat request failed (retryable): its retry goes before side requests
# (until the user sends a line: the chat's retries are over then, and what was sent goes)
SETTLE_SECONDS = 30.0  # at most this long for a hung-up request's slot to go idle
_POLL = 0.1  # seconds between two looks at /slots

class Typing:
    """When the user last typed at the prompt (time.monotonic): side requests wait
    QUIET_SECONDS after it. One per process (``Lanes.typing``), held by each of its lanes."""

    def __init__(self) -> None:
        self.at = float("-inf")
        self.sent_at = float("-inf")  # when the prompt was last emptied (a line sent)

    def note(self, text: str = "x") -> None:
        """The prompt's text changed: ``text`` empty (a line just sent, or all of it deleted)
        holds nothing back: what was sent, a chat message or a command such as `compact`,
        goes as it is, even right after a chat request failed (its retries are over: the
        prompt is back)."""
        now = time.monotonic()
        self.at = now if text else float("-inf")
        if not text:
            self.sent_at = now

    def quiet_from(self) -> float:
        """When a side request may start as far as typing goes (time.monotonic)."""
        return self.at + QUIET_SECONDS


def slots_idle(base_url: str | None) -> bool | None:
    """Whether llama.cpp's ``GET /slots`` shows no slot processing; None when the server has
    no such view (disabled: 501, another server: 404) or it cannot be read."""
    if not base_url:
        return None
    slots = fetch_json(f"{server_root(base_url)}/slots", None, timeout=1.0)
    if not isinstance(slots, list) or not all(isinstance(s, dict) for s in slots):
        return None
    return not any(s.get("is_processing") for s in slots)


def default_limit(base_url: str | None) -> int | None:
    """Requests at once when not configured: None (no limit) for the official APIs, else 1
    (a server on this machine or the network, or any OpenAI-compatible one)."""
    host = (urlsplit(base_url).hostname or "") if base_url else ""
    if not base_url or host in _OFFICIAL_HOSTS:
        return None
    return 1


@dataclass(eq=False)
class Ticket:
    """One request's place in a lane. ``rank``: who goes first (0, the chat's request; then
    summaries, then memory extraction); ``cut``: a request of a better rank needs the slot
    (a side request stops and goes back to waiting); ``expired``: its time ran out;
    ``sockets``: the connections it opened, shut down to stop a read blocked in another
    thread (closing a stream from another thread does not: the read goes on until the server
    writes)."""

    rank: int
    cut: threading.Event = field(default_factory=threading.Event)
    expired: threading.Event = field(default_factory=threading.Event)
    sockets: list[socket.socket] = field(default_factory=list)

    @property
    def foreground(self) -> bool:
        return self.rank == 0

    def stopped(self) -> bool:
        return self.cut.is_set() or self.expired.is_set()

    def abort(self) -> None:
        """Close its connections now, whatever thread reads them."""
        for sock in list(self.sockets):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class Lane:
    """The requests in flight to one server (``limit`` None: no limit, nothing waits).
    ``idle``: whether the server shows no request processing (None: it cannot tell)."""

    def __init__(self, limit: int | None, typing: Typing,
                 idle: Callable[[], bool | None] = lambda: None) -> None:
        self.limit = limit
        self._typing = typing  # the process's (Lanes.typing): the user typing holds side ones
        self._idle = idle
        self._cond = threading.Condition()
        self._running: list[Ticket] = []
        self._waiting: list[Ticket] = []
        self._hold_until = float("-inf")  # no side request starts before (time.monotonic)
        self._held_at = float("-inf")  # when the hold was set: a line sent after it ends it
        self._unsettled = False  # a request was hung up on: the server may still process it
        self.cuts = 0  # side requests cut for a better-ranked one (for the tests and bench)
        self.settled = 0  # waits for a hung-up request's slot (for the tests and bench)

    @contextlib.contextmanager
    def slot(self, purpose: Purpose, deadline: float | None = None) -> Iterator[Ticket]:
        """Hold a slot for one request of ``purpose`` while the block runs; a side request
        waiting past ``deadline`` (time.monotonic) raises ProviderTimeoutError."""
        ticket = Ticket(RANKS.get(purpose, len(RANKS)))
        with self._cond:
            self._waiting.append(ticket)
            try:
                while not self._free(ticket):
                    self._cut_worse(ticket)
                    wait = 0.5 if ticket.foreground else self._side_wait()
                    if deadline is not None and time.monotonic() + wait > deadline:
                        wait = deadline - time.monotonic()
                        if wait <= 0:
                            raise ProviderTimeoutError("no answer in time: the request "
                                                       "waited behind the chat's")
                    self._cond.wait(wait)
            finally:
                self._waiting.remove(ticket)
            self._running.append(ticket)
            owed, self._unsettled = self._unsettled, False
        try:
            if owed:
                self.settle(deadline)
            yield ticket
        except ProviderError as error:
            if ticket.foreground and error.retryable:
                self._held_at = time.monotonic()
                self._hold_until = self._held_at + HOLD_SECONDS
            raise
        else:
            if ticket.foreground:
                self._hold_until = float("-inf")
        finally:
            with self._cond:
                # hung up on: the server may go on with it; or a chat's answer just ended with
                # a request waiting behind it: llama.cpp frees a slot after its last bytes, so
                # the next request looks first (else it can meet the slot still held and
                # both overflow the shared context)
                if ticket.stopped() or (ticket.foreground and self._waiting):
                    self._unsettled = True
                self._running.remove(ticket)
                self._cond.notify_all()

    def settle(self, deadline: float | None = None) -> bool | None:
        """Wait (at most SETTLE_SECONDS, nor past ``deadline``, time.monotonic) until the
        server shows no request processing: a request whose client hung up goes on at
        llama.cpp until its prompt is processed. True once idle, False if still busy at the
        bound, None if the server cannot tell."""
        self.settled += 1
        bound = time.monotonic() + SETTLE_SECONDS
        if deadline is not None:
            bound = min(bound, deadline)
        while True:
            idle = self._idle()
            if idle is None or idle:
                return idle
            if time.monotonic() >= bound:
                return False
            time.sleep(_POLL)

    def _side_wait(self) -> float:
        """How long a side request waits before it looks again (held: until the hold ends)."""
        held = max(self._held(), self._typing.quiet_from()) - time.monotonic()
        return min(0.5, held) if held > 0 else 0.5

    def _held(self) -> float:
        """Until when a failed chat request holds side requests: not past a line sent since."""
        return self._hold_until if self._held_at > self._typing.sent_at else float("-inf")

    def _free(self, ticket: Ticket) -> bool:
        if self.limit is None:
            return True
        if any(other.rank < ticket.rank for other in self._waiting):
            return False  # the chat's request goes first, then summaries
        if not ticket.foreground:
            now = time.monotonic()
            if now < self._held() or now < self._typing.quiet_from():
                return False  # a chat request's retry, or the user typing, comes first
        return len(self._running) < self.limit

    def _cut_worse(self, ticket: Ticket) -> None:
        """Cut the worst-ranked request running that ranks below ``ticket`` (none cut yet)."""
        if any(other.cut.is_set() for other in self._running):
            return  # one is already giving way
        worse = [other for other in self._running if other.rank > ticket.rank]
        if worse:
            other = max(worse, key=lambda t: t.rank)
            self.cuts += 1
            other.cut.set()
            other.abort()


class Lanes:
    """The lanes of a process, one per server (all providers that talk to it share it), and
    the user's typing they all give way to."""

    def __init__(self) -> None:
        self.typing = Typing()
        self._lanes: dict[tuple[str, int | None], Lane] = {}
        self._lock = threading.Lock()

    def lane_for(self, base_url: str | None, limit: int | None) -> Lane:
        """The one lane of the server at ``base_url`` with ``limit``."""
        key = (_server(base_url), limit)
        with self._lock:
            if key not in self._lanes:
                idle = (lambda: slots_idle(base_url)) if limit is not None else (lambda: None)
                self._lanes[key] = Lane(limit, self.typing, idle)
            return self._lanes[key]


LANES = Lanes()  # the process's: providers take their lane from it, the prompt tells it typing


def lane_for(base_url: str | None, limit: int | None) -> Lane:
    """The process's one lane of a server (``LANES.lane_for``)."""
    return LANES.lane_for(base_url, limit)


def note_typing(text: str = "x") -> None:
    """The prompt's text changed (the UI calls this): see ``Typing.note``."""
    LANES.typing.note(text)


def _server(base_url: str | None) -> str:
    if not base_url:
        return "default"
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.hostname}:{parts.port or ''}"


_current = threading.local()


def current_ticket() -> Ticket | None:
    """The ticket of the request this thread is making (its connections are recorded)."""
    ticket: Ticket | None = getattr(_current, "ticket", None)
    return ticket


@contextlib.contextmanager
def making(ticket: Ticket) -> Iterator[None]:
    _current.ticket = ticket
    try:
        yield
    finally:
        _current.ticket = None


def trace(event: str, info: dict[str, object]) -> None:
    """httpcore's trace hook: the socket of each new connection goes to the thread's ticket."""
    ticket = current_ticket()
    if ticket is None or event != "connection.connect_tcp.complete":
        return
    stream = info.get("return_value")
    get = getattr(stream, "get_extra_info", None)
    sock = get("socket") if callable(get) else None
    if isinstance(sock, socket.socket):
        ticket.sockets.append(sock)
        if ticket.stopped():  # cut or expired while it was connecting
            ticket.abort()


def watchdog(seconds: float | None, ticket: Ticket) -> Callable[[], None]:
    """Abort ``ticket``'s connection after ``seconds``; returns the function that disarms it."""
    if seconds is None:
        return lambda: None
    def expire() -> None:
        ticket.expired.set()
        ticket.abort()

    timer = threading.Timer(max(seconds, 0.0), expire)
    timer.daemon = True
    start_worker(timer)  # (Ctrl-C blocked in it: see interrupts.start_worker)
    return timer.cancel


def traced_http_client(sdk: Any, limit: int | None) -> Any:
    """The SDK's httpx client with each new connection's socket given to the request's
    ticket (lanes.trace), so a side request can be cut from another thread; a server with a
    limit gets no kept-alive connections (a reused one would not be seen)."""
    client_class = sdk.DefaultHttpxClient
    http = importlib.import_module(next(  # the SDK's httpx (httpx or httpx2)
        c.__module__ for c in client_class.__mro__ if c.__module__.startswith("httpx")
    ).split(".")[0])

    def hook(request: Any) -> None:
        request.extensions["trace"] = trace

    kwargs: dict[str, Any] = {"event_hooks": {"request": [hook]}}
    if limit is not None:
        kwargs["limits"] = http.Limits(max_keepalive_connections=0)
    return client_class(**kwargs)
