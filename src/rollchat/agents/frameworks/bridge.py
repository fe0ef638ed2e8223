"""An async framework run as the Runner's iterator: the run goes on an event loop in a thread
of its own; its events come to the chat's thread through a queue, and so do its approvals
(``ask``), answered there (the user is asked at the chat's prompt); closing the iterator
(Ctrl-C, the end of the turn) cancels the run and waits for it to stop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any

from rollchat.domain import ToolCall
from rollchat.engine.runner import Approve, FrameworkError, RunEvent
from rollchat.providers.base import Done, StreamEvent, TextDelta, ThinkingDelta, UsageEvent

STOP_SECONDS = 10.0  # the most a cancelled run may take to stop before the turn ends anyway
INTERRUPTED = "refused: the turn was interrupted before this call"
NO_TOOLS = "refused: no tools in this call"  # a plain model call (a summary) runs none


@dataclass(frozen=True)
class _Ask:
    call: ToolCall
    answer: concurrent.futures.Future[str | None]


@dataclass(frozen=True)
class _OnChat:
    work: Callable[[], str]
    answer: concurrent.futures.Future[str | None]


@dataclass(frozen=True)
class _Failed:
    error: BaseException


_END = object()


class Channel:
    """What the framework's side of a run uses: ``put`` an event, ``ask`` for approval
    (awaited in the run's loop) or ``ask_blocking`` (from a synchronous hook)."""

    def __init__(self) -> None:
        self.queue: queue.Queue[object] = queue.Queue()
        self.closed = threading.Event()
        # the questions open, each with its answer once the chat stopped listening
        self._pending: dict[concurrent.futures.Future[str | None], str] = {}
        self._lock = threading.Lock()

    def put(self, event: RunEvent) -> None:
        self.queue.put(event)
        # the chat's thread, woken by the event, takes the GIL now: else it waits out this
        # thread's switch interval (5 ms) while the framework parses the rest of the stream
        time.sleep(0)

    def _future(self, call: ToolCall) -> concurrent.futures.Future[str | None]:
        answer: concurrent.futures.Future[str | None] = concurrent.futures.Future()
        with self._lock:
            if self.closed.is_set():
                answer.set_result(INTERRUPTED)
                return answer
            self._pending[answer] = INTERRUPTED
        self.queue.put(_Ask(call, answer))
        return answer

    async def ask(self, call: ToolCall) -> str | None:
        """None: ``call`` may run; else the refusal the model reads."""
        return await asyncio.wrap_future(self._future(call))

    def ask_blocking(self, call: ToolCall) -> str | None:
        return self._future(call).result()

    async def on_chat(self, work: Callable[[], str]) -> str:
        """``work()`` run on the chat's thread (a PostToolUse hook); "" once the chat stopped
        listening."""
        answer: concurrent.futures.Future[str | None] = concurrent.futures.Future()
        with self._lock:
            if self.closed.is_set():
                return ""
            self._pending[answer] = ""
        self.queue.put(_OnChat(work, answer))
        return await asyncio.wrap_future(answer) or ""

    def answered(self, answer: concurrent.futures.Future[str | None], reply: str | None) -> None:
        with self._lock:
            self._pending.pop(answer, None)
        if not answer.done():
            answer.set_result(reply)

    def close(self) -> None:
        """The chat stopped listening: every question still open is refused (a hook's
        addition is none)."""
        with self._lock:
            self.closed.set()
            pending, self._pending = self._pending, {}
        for answer, closed in pending.items():
            if not answer.done():
                answer.set_result(closed)


_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def shared_loop() -> asyncio.AbstractEventLoop:
    """The one event loop every framework run of this process runs on, in a daemon thread:
    a client a framework made once (an AsyncOpenAI in the agent file) keeps its connections
    on one loop from run to run, summaries included."""
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="rollchat-framework",
                             daemon=True).start()
            _loop = loop
        return _loop


def bridged(work: Callable[[Channel], Coroutine[Any, Any, None]], approve: Approve,
            stop: Callable[[], None] | None = None) -> Iterator[RunEvent]:
    """The events of ``work(channel)``, run on the shared event loop, as they come; each
    approval it asks for is answered with ``approve`` on this thread. A failure of the run is
    raised as FrameworkError; closing the iterator calls ``stop`` (the framework's own
    cancel) and cancels the run."""
    channel = Channel()

    async def main() -> None:
        try:
            await work(channel)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # the framework's own error: one line in the chat
            channel.queue.put(_Failed(exc))
        finally:
            channel.queue.put(_END)

    future = asyncio.run_coroutine_threadsafe(main(), shared_loop())
    try:
        while True:
            item = channel.queue.get()
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise FrameworkError(_one_line(item.error)) from item.error
            if isinstance(item, _Ask):
                channel.answered(item.answer, approve(item.call))
                continue
            if isinstance(item, _OnChat):
                channel.answered(item.answer, item.work())
                continue
            yield item  # type: ignore[misc]
    finally:
        channel.close()
        if not future.done():
            if stop is not None:
                stop()
            future.cancel()
            concurrent.futures.wait([future], STOP_SECONDS)


def plain_call(work: Callable[[Channel], Coroutine[Any, Any, None]]) -> Iterator[StreamEvent]:
    """An adapter's model as a plain call (summaries, the restoration's acknowledgment): the
    text, thinking and usage ``work(channel)`` puts, then Done; a tool call is refused."""
    for event in bridged(work, lambda call: NO_TOOLS):
        if isinstance(event, (TextDelta, ThinkingDelta, UsageEvent)):
            yield event
    yield Done()


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
