"""The turn in progress on disk: after each tool call of a turn, the turn so far (the user's
message, the text, every call and its result, in order) is written as a provisional block marked
interrupted, which the finished turn replaces (session_file.FileSession.write_pending). A crash
or SIGKILL during a long tool loop then loses no completed call, and resume parses them back.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from datetime import datetime
from typing import TypeVar

from rollchat.domain import Block, Turn
from rollchat.events import Event, ToolFinished
from rollchat.session.state import now

T = TypeVar("T")
# Writes the turn so far (provisional, marked interrupted: see Recorder.write_pending).
Write = Callable[[Turn], Generator[Event, None, None]]
Blocks = Callable[[], Sequence[Block]]


def checkpointed(flow: Generator[Event, None, T], write: Write, blocks: Blocks, number: int,
                 user: str, context: str = "", block: str = "",
                 clock: Callable[[], datetime] = now) -> Generator[Event, None, T]:
    """``flow`` (the engine's call for ``user``'s message, query ``number``), unchanged for
    its caller (events, Ctrl-C thrown in, its result), with the turn so far (``blocks``: the
    engine's record of it, in order) given to ``write`` after each tool call ends."""
    started = clock()
    try:
        event = next(flow)
        while True:
            if isinstance(event, ToolFinished):
                yield from write(Turn("query", number, started, user, tuple(blocks()),
                                      status="interrupted", context=context,
                                      context_block=block))
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
