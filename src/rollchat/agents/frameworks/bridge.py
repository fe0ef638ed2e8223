"""An async framework run as the Runner's iterator: the run goes on the one shared event loop,
which the thread waiting for the run's next event runs itself (the chat's thread for a turn), so
an event reaches the chat with no hand-off between threads; its approvals (``ask``) are answered
on that thread (the user is asked at the chat's prompt); closing the iterator (Ctrl-C, the end of
the turn) cancels the run and waits for it to stop."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
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


class SharedLoop:
    """The one event loop every framework run of this process runs on (a client a framework
    made once, an AsyncOpenAI in the agent file, keeps its connections on one loop from run to
    run, summaries included). No thread of its own: a thread waiting for a run's event runs it
    until the event comes, one thread at a time; a thread waiting while another runs it is
    woken when its event comes (a summary's worker thread and the chat's turn share it so)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.changed = threading.Condition()  # an item came, or the loop is free
        self.driver: int | None = None  # the thread running the loop now

    def wait(self, ready: Callable[[], bool],
             until: Callable[[], Coroutine[Any, Any, Any] | asyncio.Future[Any]],
             deadline: float | None = None) -> None:
        """Until ``ready()`` (checked under ``changed``): run the loop on this thread with
        ``until()`` (a coroutine, or a future of the loop) whenever no other thread runs it,
        else wait to be woken (at ``deadline`` at the latest, a ``time.monotonic()``)."""
        me = threading.get_ident()
        while True:
            with self.changed:
                while not ready() and self.driver is not None:
                    self.changed.wait(None if deadline is None
                                      else max(0.0, deadline - time.monotonic()))
                if ready():
                    return
                self.driver = me
            waited = until()
            task = waited if isinstance(waited, asyncio.Future) else self.loop.create_task(
                waited)
            try:
                if asyncio._get_running_loop() is None:
                    self._run(task, ready)
                else:  # a loop of another runs on this thread: a helper runs ours meanwhile
                    helper = threading.Thread(target=self._run, args=(task, ready),
                                              daemon=True, name="rollchat-framework")
                    helper.start()
                    try:
                        helper.join()
                    except BaseException:  # Ctrl-C: the helper stops before the loop is free
                        self.loop.call_soon_threadsafe(task.cancel)
                        helper.join()
                        raise
            finally:
                task.cancel()  # done already, unless Ctrl-C stopped the loop
                with self.changed:
                    self.driver = None
                    self.changed.notify_all()

    def _run(self, task: asyncio.Future[Any], ready: Callable[[], bool]) -> None:
        """The loop run until ``task`` is done or ``ready()`` (a channel stops the loop as an
        item comes: see ``Channel._wake``). Not ``run_until_complete``: a Ctrl-C inside the
        loop can leave its stop scheduled, which would end the next run early (so the stop
        this run scheduled does nothing once it is over)."""
        over = False

        def stop(_: object) -> None:
            if not over:
                self.loop.stop()

        task.add_done_callback(stop)
        try:
            while not task.done() and not ready():
                self.loop.run_forever()
        finally:
            over = True
            task.remove_done_callback(stop)

    def running_here(self) -> bool:
        return self.driver == threading.get_ident()


_shared: SharedLoop | None = None
_shared_lock = threading.Lock()


def _shared_loop() -> SharedLoop:
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = SharedLoop()
        return _shared


def shared_loop() -> asyncio.AbstractEventLoop:
    """The event loop every framework run of this process runs on (``call_soon_threadsafe``
    reaches it from any thread)."""
    return _shared_loop().loop


class Channel:
    """What the framework's side of a run uses: ``put`` an event, ``ask`` for approval, and
    ``on_chat`` for work on the chat's thread (each awaited in the run's loop)."""

    def __init__(self, shared: SharedLoop) -> None:
        self._shared = shared
        self.items: collections.deque[object] = collections.deque()
        self._arrived: asyncio.Future[None] | None = None
        self.ended = False  # the run's task is done (its last item, _END, is in ``items``)
        self._ending: asyncio.Future[None] | None = None
        self.closed = threading.Event()
        # the questions open, each with its answer once the chat stopped listening
        self._pending: dict[concurrent.futures.Future[str | None], str] = {}
        self._lock = threading.Lock()

    def put(self, event: RunEvent) -> None:
        self._push(event)

    def _push(self, item: object) -> None:
        with self._shared.changed:
            self.items.append(item)
            self._shared.changed.notify_all()
        if self._shared.running_here():
            self._wake()
        else:  # from a thread of the framework's own (a tool's): the loop's runner is woken
            self._shared.loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        """In the loop: the thread waiting for this channel's next item (``arrival``) gets
        it now: the loop stops at the end of this step, not after the rest of the run's
        ready work (the framework reading the rest of a buffered answer) and one more step
        for the future's callback."""
        arrived, self._arrived = self._arrived, None
        if arrived is not None and not arrived.done():
            arrived.set_result(None)
            self._shared.loop.stop()

    def finish(self) -> None:
        """The run's task is done (called in the loop): the reader gets _END."""
        self.ended = True
        self._push(_END)
        if self._ending is not None and not self._ending.done():
            self._ending.set_result(None)

    async def end(self, seconds: float) -> None:
        """Returns once the run's task is done, or after ``seconds``."""
        if self.ended:
            return
        self._ending = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait([self._ending], timeout=seconds)
        finally:
            self._ending = None

    def arrival(self) -> asyncio.Future[None]:
        """A future of the loop, done once an item is here (made by the thread about to run
        the loop for it: no task, so none is left pending when the loop stops as it comes)."""
        arrived: asyncio.Future[None] = self._shared.loop.create_future()
        if self.items:
            arrived.set_result(None)
        else:
            self._arrived = arrived
        return arrived

    def next(self) -> object:
        """The next item, the loop run on this thread until it comes."""
        self._shared.wait(lambda: bool(self.items), self.arrival)
        with self._shared.changed:
            return self.items.popleft()

    def _future(self, call: ToolCall) -> concurrent.futures.Future[str | None]:
        answer: concurrent.futures.Future[str | None] = concurrent.futures.Future()
        with self._lock:
            if self.closed.is_set():
                answer.set_result(INTERRUPTED)
                return answer
            self._pending[answer] = INTERRUPTED
        self._push(_Ask(call, answer))
        return answer

    async def ask(self, call: ToolCall) -> str | None:
        """None: ``call`` may run; else the refusal the model reads."""
        return await asyncio.wrap_future(self._future(call))

    async def on_chat(self, work: Callable[[], str]) -> str:
        """``work()`` run on the chat's thread (a PostToolUse hook); "" once the chat stopped
        listening."""
        answer: concurrent.futures.Future[str | None] = concurrent.futures.Future()
        with self._lock:
            if self.closed.is_set():
                return ""
            self._pending[answer] = ""
        self._push(_OnChat(work, answer))
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


def bridged(work: Callable[[Channel], Coroutine[Any, Any, None]], approve: Approve,
            stop: Callable[[], None] | None = None) -> Iterator[RunEvent]:
    """The events of ``work(channel)``, run on the shared event loop (by this thread while it
    waits for them), as they come; each approval it asks for is answered with ``approve`` on
    this thread. A failure of the run is raised as FrameworkError; closing the iterator calls
    ``stop`` (the framework's own cancel) and cancels the run."""
    shared = _shared_loop()
    channel = Channel(shared)

    async def main() -> None:
        try:
            await work(channel)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # the framework's own error: one line in the chat
            channel._push(_Failed(exc))

    tasks: list[asyncio.Task[None]] = []

    def start() -> None:
        task = shared.loop.create_task(main())
        task.add_done_callback(lambda _: channel.finish())  # even if cancelled unstarted
        tasks.append(task)

    shared.loop.call_soon_threadsafe(start)
    try:
        while True:
            item = channel.next()
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
        if not channel.ended:
            if stop is not None:
                stop()
            # after ``start`` (the loop runs its callbacks in order)
            shared.loop.call_soon_threadsafe(lambda: tasks[0].cancel())
            deadline = time.monotonic() + STOP_SECONDS
            shared.wait(lambda: channel.ended or time.monotonic() >= deadline,
                        lambda: channel.end(max(0.0, deadline - time.monotonic())), deadline)


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
