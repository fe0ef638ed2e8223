"""Running one tool call: look the tool up, ask the approval gate, run it, time it, and turn
every failure into a result the model reads (unknown tool, refusal, bad arguments, an
exception). A Ctrl-C while it runs is recorded as an interrupted call and re-raised."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from rollchat.domain import Image, ToolCall
from rollchat.tools import Tool
from rollchat.tools.approval import Gate
from rollchat.tools.images import returned

CallStatus = Literal["ok", "error", "refused", "interrupted"]
INTERRUPTED_RESULT = "[interrupted by user: the tool call was cancelled]"


@dataclass(frozen=True)
class CallOutcome:
    result: str
    status: CallStatus
    elapsed: float
    images: tuple[Image, ...] = ()


class CallInterrupted(KeyboardInterrupt):
    """Ctrl-C during a tool call (or its approval prompt), with the call's recorded outcome."""

    def __init__(self, outcome: CallOutcome) -> None:
        super().__init__()
        self.outcome = outcome


def run_call(call: ToolCall, tools: Mapping[str, Tool], gate: Gate) -> CallOutcome:
    """The outcome of ``call``; raises CallInterrupted on Ctrl-C. Its time is the tool's own
    (and its PostToolUse hooks'): from the approval on, never the user's wait to approve it."""
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return CallOutcome(f"error: unknown tool {call.name!r} (tools: {known})", "error", 0.0)
    started: float | None = None  # when the tool started: after the gate let it through
    try:  # the user's PreToolUse hooks first, before anyone is asked (as in Claude Code)
        hooks = gate.hooks
        refusal = (hooks.before_tool(call) if hooks is not None else None) or gate.check(
            call, tool)
        if refusal is not None:
            return CallOutcome(refusal, "refused", 0.0)
        started = time.monotonic()
        try:
            result = tool.run(call.arguments)
        except Exception as exc:  # a tool's failure is reported to the model, not raised
            return CallOutcome(error_text(exc), "error", time.monotonic() - started)
    except KeyboardInterrupt:
        ran = 0.0 if started is None else time.monotonic() - started
        raise CallInterrupted(CallOutcome(INTERRUPTED_RESULT, "interrupted", ran)) from None
    text, images = returned(result)
    if hooks is not None:  # a PostToolUse hook's word goes to the model with the result
        text += hooks.after_tool(call, text, "ok")
    return CallOutcome(text, "ok", time.monotonic() - started, images)


def error_text(exc: Exception) -> str:
    """An exception as the model reads it: rollchat's own errors (bad arguments, an archive
    read) by their message, any other by its type and message."""
    if type(exc).__module__.startswith("rollchat."):
        return f"error: {exc}"
    return f"error: {type(exc).__name__}: {exc}"
