"""The engine against scripted providers: streaming, interruption, errors, tools, baseline."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from rollchat.domain import Message, ToolCall, Usage
from rollchat.engine.core import INTERRUPTED_NOTE, MAX_TOOL_ROUNDS, Engine, EngineSettings
from rollchat.events import Event as EngineEvent
from rollchat.events import Notice
from rollchat.providers.base import (
    ChatRequest,
    Done,
    RateLimitError,
    RetryPolicy,
    ServerError,
    StreamEvent,
    TextDelta,
    ToolCallEvent,
    ToolSpec,
    UsageEvent,
)
from rollchat.tools import Tool
from tests.drive import turn as run_turn


class Scripted:
    """Replays one scripted list of events (or an exception) per call; records requests."""

    name = "scripted"

    def __init__(self, *scripts: list[StreamEvent | BaseException]) -> None:
        self.scripts = list(scripts)
        self.requests: list[ChatRequest] = []

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        self.requests.append(request)
        for item in self.scripts.pop(0):
            if isinstance(item, BaseException):
                raise item
            yield item


def _engine(provider: Scripted, tools: Mapping[str, Tool] | None = None,
            rounds: int = MAX_TOOL_ROUNDS) -> Engine:
    return Engine(EngineSettings(
        provider, model="m", system="sys", max_output_tokens=100, temperature=None,
        retry=RetryPolicy(max_retries=2, base_delay=0.01), tools=tuple((tools or {}).values()),
        max_tool_rounds=rounds, sleep=lambda s: None))


def _reply(text: str, tokens: int = 10) -> list[StreamEvent | BaseException]:
    return [TextDelta(w) for w in text.split(" ")] + [
        UsageEvent(Usage(tokens, 3)), Done()]


def test_turn_streams_and_updates_context() -> None:
    seen: list[EngineEvent] = []
    provider = Scripted(_reply("hello there", 42))
    engine = _engine(provider)
    turn = run_turn(engine.chat("hi"), seen.append)
    assert turn.status == "ok" and turn.assistant == "hellothere"
    assert turn.usage == Usage(42, 3)
    assert [m.role for m in engine.context.messages] == ["user", "assistant"]
    assert engine.context.last_prompt_tokens == 42
    # the reported 42 tokens covered the user message: only the answer is new
    assert engine.context.unreported() == [Message("assistant", "hellothere")]
    assert provider.requests[0].system == "sys"
    assert len([e for e in seen if isinstance(e, TextDelta)]) == 2


def test_unreported_call_counts_everything_added() -> None:
    provider = Scripted([TextDelta("no usage"), Done()])
    engine = _engine(provider)
    run_turn(engine.chat("hi"), lambda e: None)
    assert engine.context.last_prompt_tokens is None
    assert [m.role for m in engine.context.unreported()] == ["user", "assistant"]


def test_requests_are_cleaned_of_orphan_tool_results() -> None:
    provider = Scripted(_reply("ok"))
    engine = _engine(provider)
    engine.context.reset([Message("tool", "orphan", tool_call_id="x", name="t")], 0)
    run_turn(engine.chat("q"), lambda e: None)
    assert [m.role for m in provider.requests[0].messages] == ["user"]


def test_interrupt_keeps_partial_text_marked() -> None:
    provider = Scripted([TextDelta("partial "), TextDelta("answer"), KeyboardInterrupt()])
    engine = _engine(provider)
    turn = run_turn(engine.chat("question"), lambda e: None)
    assert turn.status == "interrupted"
    assert turn.assistant == "partial answer"
    assert engine.context.messages[-1].content == f"partial answer\n\n{INTERRUPTED_NOTE}"


def test_interrupt_in_the_renderer_is_caught_too() -> None:
    provider = Scripted(_reply("one two three"))
    engine = _engine(provider)

    def on_event(event: EngineEvent) -> None:
        if isinstance(event, TextDelta) and event.text == "two":
            raise KeyboardInterrupt

    turn = run_turn(engine.chat("q"), on_event)
    assert turn.status == "interrupted" and turn.assistant == "onetwo"


def test_error_before_answer_leaves_message_unanswered() -> None:
    provider = Scripted([ServerError("boom")], [ServerError("boom")], [ServerError("boom")])
    engine = _engine(provider)
    turn = run_turn(engine.chat("keep me"), lambda e: None)
    assert turn.status == "unanswered" and turn.user == "keep me"
    assert turn.error is not None and "boom" in turn.error
    assert engine.context.messages == []  # not sent next time: the user sends it again
    assert len(provider.requests) == 3  # the first try and two retries


def test_retry_then_success() -> None:
    events: list[EngineEvent] = []
    provider = Scripted([RateLimitError("slow down", retry_after=0.0)], _reply("ok"))
    turn = run_turn(_engine(provider).chat("q"), events.append)
    assert turn.status == "ok"
    assert any(type(e).__name__ == "Retrying" for e in events)


def test_error_mid_answer_keeps_partial() -> None:
    provider = Scripted([TextDelta("half"), ServerError("cut")])
    turn = run_turn(_engine(provider).chat("q"), lambda e: None)
    assert turn.status == "error" and turn.assistant == "half"


def test_tool_loop_feeds_results_back() -> None:
    call = ToolCall("c1", "echo", {"text": "abc"})
    provider = Scripted([ToolCallEvent(call), Done("tool_use")], _reply("done"))
    tool = Tool(ToolSpec("echo", "echo text", {"type": "object"}),
                lambda args: f"echo:{args['text']}")
    engine = _engine(provider, {"echo": tool})
    turn = run_turn(engine.chat("use the tool"), lambda e: None)
    assert turn.tools[0].result == "echo:abc"
    second = provider.requests[1].messages
    assert second[-2].tool_calls == (call,)
    assert second[-1] == Message("tool", "echo:abc", tool_call_id="c1", name="echo")
    roles = [m.role for m in engine.context.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]


def test_restore_resets_context_and_baseline() -> None:
    provider = Scripted(_reply("first", 50), _reply("I have reviewed it", 20))
    engine = _engine(provider)
    run_turn(engine.chat("hi"), lambda e: None)
    turn = run_turn(engine.restore("CONTEXT RESTORATION ..."), lambda e: None)
    assert turn.kind == "restored"
    assert [m.content for m in engine.context.messages] == [
        "CONTEXT RESTORATION ...", "IhavereviewedIt".replace("It", "it")]
    assert engine.context.prefix_len == 2
    assert provider.requests[1].purpose == "restore"
    assert provider.requests[1].messages == (Message("user", "CONTEXT RESTORATION ..."),)
    assert engine.context.last_prompt_tokens is None


@pytest.mark.parametrize("rounds", [1, 3])
def test_tool_rounds_are_capped_with_one_line_saying_so(rounds: int) -> None:
    call = ToolCall("c", "echo", {})
    scripts = [[ToolCallEvent(call), Done("tool_use")] for _ in range(rounds + 1)]
    runs: list[str] = []
    tool = Tool(ToolSpec("echo", "", {}), lambda args: runs.append("x") or "x")
    provider = Scripted(*scripts)
    engine = _engine(provider, {"echo": tool}, rounds)
    events: list[object] = []
    turn = run_turn(engine.chat("loop"), events.append)
    assert turn.error is not None and f"after {rounds} tool rounds" in turn.error
    assert len(runs) == rounds and len(provider.requests) == rounds + 1
    notices = [e for e in events if isinstance(e, Notice)]
    assert len(notices) == 1 and "max_tool_rounds" in notices[0].text
    # every call in the context has its result: the next request is well formed
    calls = sum(len(m.tool_calls) for m in engine.context.messages)
    results = [m for m in engine.context.messages if m.role == "tool"]
    assert calls == len(results) == rounds


def test_text_around_a_tool_call_stays_in_separate_paragraphs() -> None:
    call = ToolCall("c1", "echo", {"text": "abc"})
    provider = Scripted([TextDelta("Let me look."), ToolCallEvent(call), Done("tool_use")],
                        _reply("Found it."))
    tool = Tool(ToolSpec("echo", "echo text", {"type": "object"}), lambda args: "x")
    shown: list[str] = []
    turn = run_turn(_engine(provider, {"echo": tool}).chat("q"),
                    lambda e: shown.append(e.text) if isinstance(e, TextDelta) else None)
    assert turn.assistant == "Let me look.\n\nFoundit."
    assert "".join(shown) == turn.assistant


def test_a_partial_answer_cut_by_an_error_is_marked_for_the_model() -> None:
    provider = Scripted([TextDelta("half an "), ServerError("connection lost")])
    engine = _engine(provider)
    run_turn(engine.chat("q"), lambda e: None)
    last = engine.context.messages[-1].content
    assert last.startswith("half an ") and "[answer cut off:" in last
