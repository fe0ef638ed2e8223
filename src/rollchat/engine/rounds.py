"""One round of tool calls: a reply's calls run in order, each result recorded and given to the
context before it is shown, and a Ctrl-C during a call recorded so every call has a result."""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence

from rollchat.domain import Block, Message, ProviderBlock, ToolCall, ToolResult, ToolUse
from rollchat.events import Event, ToolFinished, ToolStarted
from rollchat.tools.runner import CallInterrupted, CallOutcome

NOT_RUN = "[not run: the turn was interrupted before this call]"
INTERRUPTED_NOTE = "[interrupted by user]"  # after a partial answer, as the model reads it


def trailing(blocks: Sequence[Block]) -> tuple[ProviderBlock, ...]:
    """The provider blocks of the last round (after the last call or result): sent back with
    the answer's own message, as engine/replay.py rebuilds it."""
    after = next((i for i in range(len(blocks), 0, -1)
                  if isinstance(blocks[i - 1], (ToolUse, ToolResult))), 0)
    return tuple(b for b in blocks[after:] if isinstance(b, ProviderBlock))
Run = Callable[[ToolCall], tuple[ToolResult, str, CallOutcome]]


def run_round(calls: Sequence[ToolCall], add: Callable[[Message], None],
              record: Callable[[Block], None], run: Run) -> Generator[Event, None, None]:
    """Run one reply's ``calls`` in order with ``run`` (a result block, the result as sent,
    the outcome): each result is ``record``-ed and given to ``add`` before it is shown, so a
    Ctrl-C while it is drawn keeps it. A Ctrl-C during a call records it as interrupted and
    every call after it as not run, so each call has a result; then it is raised again."""
    for index, call in enumerate(calls):
        yield ToolStarted(call)
        try:
            result, sent, outcome = run(call)
        except CallInterrupted as stop:
            for rest, text in ((call, stop.outcome.result),
                               *((c, NOT_RUN) for c in calls[index + 1:])):
                record(ToolResult(rest.id, text, is_error=True))
                add(Message("tool", text, tool_call_id=rest.id, name=rest.name,
                            is_error=True))
            yield ToolFinished(call, stop.outcome.result, stop.outcome.elapsed, "interrupted")
            raise KeyboardInterrupt from None
        record(result)
        add(Message("tool", sent, tool_call_id=call.id, name=call.name, images=result.images,
                    is_error=result.is_error))
        yield ToolFinished(call, result.content, outcome.elapsed, outcome.status)
