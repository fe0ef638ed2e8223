"""A turn run by a Runner (engine/runner.py: an agent framework): its events drawn as the
Engine's own are, its ordered blocks recorded as they come, and each tool call approved by the
agent's gate and hooks before the framework runs it."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

from rollchat.domain import (
    ROUND_SEPARATOR,
    Block,
    Message,
    Text,
    ToolCall,
    ToolResult,
    ToolUse,
    TurnStatus,
    Usage,
)
from rollchat.engine.replay import answer_messages
from rollchat.engine.runner import RunEvent, Runner, RunRequest, ToolCalled, ToolReturned
from rollchat.engine.thinking import Split, took
from rollchat.events import Event, ToolFinished, ToolStarted
from rollchat.providers.base import (
    ProviderError,
    TextDelta,
    ThinkingDelta,
    ToolSpec,
    UsageEvent,
)
from rollchat.text.normalize import StreamCleaner, clean, clean_value
from rollchat.tools import Tool
from rollchat.tools.approval import Gate


@dataclass(frozen=True)
class Framed:
    """What a Runner's turn came to (the Engine makes its CallResult of it)."""

    text: str
    last: str  # the text after the last tool result: the answer proper
    usage: Usage
    status: TurnStatus
    error: ProviderError | None
    elapsed: float
    calls: tuple[Usage, ...] = ()  # each model call's usage, as the framework reported it


def approver(gate: Gate, tools: dict[str, Tool], framework: str) -> Callable[
        [ToolCall], str | None]:
    """The approval of a framework's tool call: the user's PreToolUse hooks, then the gate
    (ask/auto/never, allow and deny rules), as for rollchat's own tools."""
    def approve(call: ToolCall) -> str | None:
        call = ToolCall(clean(call.id), clean(call.name), clean_value(call.arguments))
        tool = tools.get(call.name) or Tool(ToolSpec(call.name, ""), run=_not_here,
                                            source=framework)
        hooks = gate.hooks
        return (hooks.before_tool(call) if hooks is not None else None) or gate.check(call,
                                                                                     tool)
    return approve


def post_hooks(gate: Gate) -> Callable[[ToolCall, str, str], str] | None:
    """The user's PostToolUse hooks for a framework's calls (None: there are none)."""
    hooks = gate.hooks
    if hooks is None or not hooks.wanted("PostToolUse"):
        return None
    return hooks.after_tool


def _not_here(arguments: object) -> object:
    raise RuntimeError("a framework's tool runs in its framework")


def run_framed(runner: Runner, request: RunRequest, blocks: list[Block],
               add: Callable[[Message], None], reported: Callable[[int], None],
               ) -> Generator[Event, None, Framed]:
    """Run ``request`` through ``runner``: events drawn, blocks appended to ``blocks`` as they
    come (kept on Ctrl-C), the replies with tool calls and their results given to ``add``
    once the run ends (as engine/replay.py rebuilds them), then the last call's prompt size
    to ``reported`` (the baseline of the next estimate)."""
    t0 = time.monotonic()
    text: list[str] = []
    thought: list[str] = []
    usage = Usage()
    made: list[Usage] = []  # each model call's usage (the session bills each)
    status: TurnStatus = "ok"
    error: ProviderError | None = None
    mark = len(blocks)
    prompt: int | None = None  # the last model call's prompt size, as reported
    state = _Round(text, thought)
    events = runner.run(request)
    try:
        for event in events:
            yield from state.take(event, blocks)
            if isinstance(event, UsageEvent):
                usage, prompt = usage + event.usage, event.usage.input_tokens
                made.append(event.usage)
                yield event
    except KeyboardInterrupt:
        status = "interrupted"
    except ProviderError as exc:
        error = exc
        status = "error" if "".join(text) or len(blocks) > mark else "unanswered"
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()  # the adapter stops the framework's run
    last = yield from state.end(blocks, status == "ok")
    replies, _, _ = answer_messages(tuple(blocks[mark:]))
    for message in replies:
        add(message)
    if prompt is not None:  # it measured the replies and results just given to ``add``
        reported(prompt)
    return Framed("".join(text), last, usage, status, error, time.monotonic() - t0,
                  tuple(made))


class _Round:
    """The text and thinking of the round in flight, cut into blocks at each tool call."""

    def __init__(self, text: list[str], thought: list[str]) -> None:
        self.text, self.thought = text, thought
        self.mark = 0
        self.split, self.cleaner = Split(text, thought), StreamCleaner()
        self.after_result = False
        self.calls: dict[str, ToolCall] = {}

    def take(self, event: RunEvent, blocks: list[Block]) -> Generator[Event, None, None]:
        if isinstance(event, (TextDelta, ThinkingDelta)):
            if self.after_result and isinstance(event, TextDelta) and \
                    "".join(self.text).strip():
                self.text.append(ROUND_SEPARATOR)  # a new round's text: its own paragraph
                self.mark = len(self.text)  # on screen, not in the round's Text block
                yield TextDelta(ROUND_SEPARATOR)
            self.after_result = False
            if isinstance(event, TextDelta):
                yield from self.split.text(self.cleaner.feed(event.text))
            else:
                yield from self.split.thinking(event.text)
        elif isinstance(event, ToolCalled):
            call = ToolCall(clean(event.call.id), clean(event.call.name),
                            clean_value(event.call.arguments))
            yield from self._flush(blocks)
            blocks.append(ToolUse(call))
            self.calls[call.id] = call
            yield ToolStarted(call)
        elif isinstance(event, ToolReturned):
            call = self.calls.get(event.call.id, event.call)
            content = clean(event.content)
            blocks.append(ToolResult(call.id, content, event.status != "ok"))
            self.after_result = True
            yield ToolFinished(call, content, event.elapsed, event.status)

    def _flush(self, blocks: list[Block]) -> Generator[Event, None, None]:
        yield from self.split.end(self.cleaner.flush())
        said = "".join(self.text[self.mark:])
        blocks.extend([*took(self.thought), *([Text(said)] if said.strip() else [])])
        self.mark = len(self.text)
        self.split, self.cleaner = Split(self.text, self.thought), StreamCleaner()

    def end(self, blocks: list[Block], shown: bool) -> Generator[Event, None, str]:
        """The last round's thinking and text as blocks (what was held back drawn when
        ``shown``); its text returned."""
        if shown:
            yield from self.split.end(self.cleaner.flush())
        else:
            self.split.keep(self.cleaner.flush())
        last = "".join(self.text[self.mark:])
        blocks.extend([*took(self.thought), *([Text(last)] if last else [])])
        return last


def history_of(messages: Sequence[Message]) -> tuple[tuple[Message, ...], Message]:
    """The history before the turn and the user's message, from a request's messages."""
    return tuple(messages[:-1]), messages[-1]
