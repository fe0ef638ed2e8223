"""An async framework run as the Runner's iterator: the run goes on an event loop in a thread
of its own; its events come to the chat's thread through a queue, and so do its approvals
(``ask``), answered there (the user is asked at the chat's prompt); closing the iterator
(Ctrl-C, the end of the turn) cancels the run and waits for it to stop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import threading
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any

from rollchat.domain import ToolCall
from rollchat.engine.runner import Approve, FrameworkError, RunEvent

STOP_SECONDS = 10.0  # the most a cancelled run may take to stop before the turn ends anyway
INTERRUPTED = "refused: the turn was interrupted before this call"


@dataclass(frozen=True)
class _Ask:
    call: ToolCall
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
        self._pending: set[concurrent.futures.Future[str | None]] = set()
        self._lock = threading.Lock()

    def put(self, event: RunEvent) -> None:
        self.queue.put(event)

    def _future(self, call: ToolCall) -> concurrent.futures.Future[str | None]:
        answer: concurrent.futures.Future[str | None] = concurrent.futures.Future()
        with self._lock:
            if self.closed.is_set():
                answer.set_result(INTERRUPTED)
                return answer
            self._pending.add(answer)
        self.queue.put(_Ask(call, answer))
        return answer

    async def ask(self, call: ToolCall) -> str | None:
        """None: ``call`` may run; else the refusal the model reads."""
        return await asyncio.wrap_future(self._future(call))

    def ask_blocking(self, call: ToolCall) -> str | None:
        return self._future(call).result()

    def answered(self, answer: concurrent.futures.Future[str | None], reply: str | None) -> None:
        with self._lock:
            self._pending.discard(answer)
        if not answer.done():
            answer.set_result(reply)

    def close(self) -> None:
        """The chat stopped listening: every question still open is refused."""
        with self._lock:
            self.closed.set()
            pending, self._pending = self._pending, set()
        for answer in pending:
            if not answer.done():
                answer.set_result(INTERRUPTED)


def bridged(work: Callable[[Channel], Coroutine[Any, Any, None]], approve: Approve,
            stop: Callable[[], None] | None = None) -> Iterator[RunEvent]:
    """The events of ``work(channel)`` run on its own event loop, as they come; each approval
    it asks for is answered with ``approve`` on this thread. A failure of the run is raised
    as FrameworkError; closing the iterator calls ``stop`` (the framework's own cancel) and
    cancels the run."""
    channel = Channel()
    loop = asyncio.new_event_loop()
    started = threading.Event()
    tasks: list[asyncio.Task[None]] = []

    async def main() -> None:
        try:
            await work(channel)
        except asyncio.CancelledError:
            pass
        except BaseException as exc:  # the framework's own error: one line in the chat
            channel.queue.put(_Failed(exc))
        finally:
            channel.queue.put(_END)

    def thread_main() -> None:
        asyncio.set_event_loop(loop)
        try:
            tasks.append(loop.create_task(main()))
            started.set()
            loop.run_until_complete(tasks[0])
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    thread = threading.Thread(target=thread_main, name="rollchat-framework", daemon=True)
    thread.start()
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
            yield item  # type: ignore[misc]
    finally:
        channel.close()
        if thread.is_alive() and stop is not None:
            stop()
        if thread.is_alive():
            started.wait(STOP_SECONDS)
            if tasks and not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(tasks[0].cancel)
            thread.join(STOP_SECONDS)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
