"""The bridge between an async framework's run and the chat's thread (agents/frameworks/
bridge.py), with no framework: the run goes on the thread reading its events (no hand-off
between threads per event), approvals are answered there, two runs on two threads share the
one loop, and closing the iterator or a Ctrl-C inside the loop stops the run and leaves the
loop usable."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from rollchat.agents.frameworks.bridge import Channel, bridged, plain_call, shared_loop
from rollchat.domain import ToolCall
from rollchat.engine.runner import FrameworkError, RunEvent
from rollchat.providers.base import Done, TextDelta

WAIT = 30.0  # the most a test waits for another thread (the machine may be loaded)


def _texts(events: Iterator[RunEvent]) -> list[str]:
    return [event.text for event in events if isinstance(event, TextDelta)]


def test_the_run_goes_on_the_thread_that_reads_its_events() -> None:
    threads: list[int] = []

    async def work(channel: Channel) -> None:
        for word in ("one", "two"):
            threads.append(threading.get_ident())
            channel.put(TextDelta(word))
            await asyncio.sleep(0)

    assert _texts(bridged(work, lambda call: None)) == ["one", "two"]
    assert threads == [threading.get_ident()] * 2


def test_an_event_reaches_the_reader_before_the_runs_next_step() -> None:
    """The loop stops in the step that put the event: the reader has it before the run goes
    on (the framework reading the rest of a buffered answer is not paid before the first
    word is shown), and nothing of the loop is left pending when it stops so."""
    steps: list[str] = []
    seen: list[tuple[str, list[str]]] = []

    async def work(channel: Channel) -> None:
        for word in ("one", "two"):
            channel.put(TextDelta(word))
            await asyncio.sleep(0)
            steps.append(f"after {word}")

    for event in bridged(work, lambda call: None):
        assert isinstance(event, TextDelta)
        seen.append((event.text, list(steps)))
    assert seen == [("one", []), ("two", ["after one"])]
    assert steps == ["after one", "after two"]
    assert not [t for t in asyncio.all_tasks(shared_loop()) if not t.done()]


def test_an_approval_is_asked_and_answered_on_the_reading_thread() -> None:
    asked: list[tuple[str, int]] = []

    def approve(call: ToolCall) -> str | None:
        asked.append((call.name, threading.get_ident()))
        return None if call.name == "fine" else "refused: not this one"

    async def work(channel: Channel) -> None:
        for name in ("fine", "bad"):
            answer = await channel.ask(ToolCall(name, name, {}))
            channel.put(TextDelta(f"{name}: {answer}"))
        said = await channel.on_chat(lambda: f"hook on {threading.get_ident()}")
        channel.put(TextDelta(said))

    me = threading.get_ident()
    assert _texts(bridged(work, approve)) == ["fine: None", "bad: refused: not this one",
                                             f"hook on {me}"]
    assert asked == [("fine", me), ("bad", me)]


def test_a_failure_of_the_run_is_one_framework_error() -> None:
    async def work(channel: Channel) -> None:
        channel.put(TextDelta("partial"))
        raise ValueError("the model\nsaid no")

    events = bridged(work, lambda call: None)
    assert isinstance(next(events), TextDelta)
    with pytest.raises(FrameworkError, match=r"^ValueError: the model said no$"):
        next(events)


def test_two_runs_on_two_threads_share_the_one_loop() -> None:
    """A summary on a worker thread while the chat's turn runs: each thread gets its own
    events, and the two runs (on one loop) can wait on each other."""
    gate: asyncio.Future[str] | None = None
    made = threading.Event()

    async def turn(channel: Channel) -> None:
        nonlocal gate
        gate = asyncio.get_running_loop().create_future()
        made.set()
        channel.put(TextDelta("turn starts"))
        channel.put(TextDelta(await gate))

    async def summary(channel: Channel) -> None:
        channel.put(TextDelta("summary"))
        assert gate is not None
        gate.set_result("the summary let the turn go on")

    got: list[object] = []
    events = bridged(turn, lambda call: None)
    assert _texts([next(events)]) == ["turn starts"]
    assert made.wait(WAIT)
    worker = threading.Thread(target=lambda: got.extend(plain_call(summary)), daemon=True)
    worker.start()
    try:
        assert _texts(events) == ["the summary let the turn go on"]
    finally:
        worker.join(WAIT)
    assert not worker.is_alive()
    assert [type(event) for event in got] == [TextDelta, Done]


def test_closing_the_iterator_cancels_the_run() -> None:
    stopped: list[str] = []

    async def work(channel: Channel) -> None:
        channel.put(TextDelta("first"))
        try:
            await asyncio.Event().wait()  # a model that never answers
        finally:
            stopped.append("cancelled")

    events = bridged(work, lambda call: None, stop=lambda: stopped.append("stop"))
    assert _texts([next(events)]) == ["first"]
    events.close()  # type: ignore[attr-defined]
    assert stopped == ["stop", "cancelled"]


def test_a_ctrl_c_inside_the_loop_stops_the_run_and_the_loop_runs_the_next_one() -> None:
    stopped: list[str] = []

    def ctrl_c() -> None:
        raise KeyboardInterrupt

    async def work(channel: Channel) -> None:
        channel.put(TextDelta("partial"))
        asyncio.get_running_loop().call_soon(ctrl_c)  # the signal lands while the loop runs
        try:
            await asyncio.Event().wait()
        finally:
            stopped.append("cancelled")

    got: list[RunEvent] = []
    with pytest.raises(KeyboardInterrupt):  # at the first event or after it, as it lands
        got.extend(bridged(work, lambda call: None))
    assert stopped == ["cancelled"]
    assert not shared_loop().is_running()

    async def again(channel: Channel) -> None:
        channel.put(TextDelta("next turn"))

    assert _texts(bridged(again, lambda call: None)) == ["next turn"]
