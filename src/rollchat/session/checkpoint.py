"""The turn in progress on disk: after each tool call of a turn, the turn so far (the user's
message, the text and every call with its result) is written as a provisional block marked
interrupted, which the finished turn replaces (session_file.FileSession.write_pending). A crash
or SIGKILL during a long tool loop then loses no completed call, and resume parses them back.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, TypeVar

from rollchat.domain import ToolExchange, Turn
from rollchat.errors import StoreError
from rollchat.events import Event, ToolFinished
from rollchat.providers.base import TextDelta
from rollchat.session.forks import open_file
from rollchat.session.state import now

if TYPE_CHECKING:
    from rollchat.session.core import Session

T = TypeVar("T")


def checkpointed(flow: Generator[Event, None, T], session: Session,
                 user: str, context: str = "", block: str = "",
                 ) -> Generator[Event, None, T]:
    """``flow`` (the engine's call for ``user``'s message), unchanged for its caller (events,
    Ctrl-C thrown in, its result), with the turn so far written after each tool call ends."""
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
                turn = Turn("query", session.state.queries + 1, started, user, "".join(text),
                            status="interrupted", tools=tuple(tools), context=context,
                            context_block=block)
                yield from _write(session, turn)
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


def _write(session: Session, turn: Turn) -> Generator[Event, None, None]:
    state = session.state
    if state.save_failed:
        return
    try:
        live = state.live or (yield from open_file(
            session.store, state, session.agent, session.engine.model, session.provider_name,
            in_progress=True, cost=session.cost()))
        live.write_pending(turn, session.agent.name)
    except StoreError:
        pass  # the turn's own save at its end reports a failing disk
