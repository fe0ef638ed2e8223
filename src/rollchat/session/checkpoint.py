"""The turn in progress on disk: after each tool call of a turn, the turn so far (the user's
message, the text and every call with its result) is written as a provisional block marked
interrupted, which the finished turn replaces (session_file.FileSession.write_pending). A crash
or SIGKILL during a long tool loop then loses no completed call, and resume parses them back.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TypeVar

from rollchat.domain import ToolExchange, Turn
from rollchat.events import Event, ToolFinished
from rollchat.providers.base import TextDelta
from rollchat.session.state import now

T = TypeVar("T")
# Writes the turn so far (provisional, marked interrupted: see Recorder.write_pending).
Write = Callable[[Turn], Generator[Event, None, None]]


def checkpointed(flow: Generator[Event, None, T], write: Write, number: int,
                 user: str, context: str = "", block: str = "",
                 ) -> Generator[Event, None, T]:
    """``flow`` (the engine's call for ``user``'s message, query ``number``), unchanged for
    its caller (events, Ctrl-C thrown in, its result), with the turn so far given to
    ``write`` after each tool call ends."""
    text: list[str] = []
    tools: list[ToolExchange] = []
    started = now()
    try:
        event = next(flow)
        while True:
            if isinstance(event, TextDelta):
                text.append(event.text)
            elif isinstance(event, ToolFinished):
                tools.append(ToolExchange(event.call, event.result))
                yield from write(Turn("query", number, started, user, "".join(text),
                                      status="interrupted", tools=tuple(tools),
                                      context=context, context_block=block))
            try:
                yield event
            except GeneratorExit:
                flow.close()
                raise
            except BaseException as exc:  # Ctrl-C while the event was drawn: to the flow
                event = flow.throw(exc)
            else:
                event = next(flow)
    except StopIteration as stop:
        result: T = stop.value
        return result
