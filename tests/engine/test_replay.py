"""Saved turns give back the requests that were sent: a chat with text before calls, parallel
calls, several rounds, a failing tool, a result cut to fit, an interruption; each turn saved to
a real session file, read back, and its messages rebuilt equal to the working context's, and the
providers' wire payloads built from them byte-identical."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

from rollchat.domain import Text, Thinking, ToolCall, ToolResult, ToolUse, Turn, Usage
from rollchat.engine.context import WorkingContext
from rollchat.engine.core import Engine, EngineSettings
from rollchat.engine.replay import turn_messages
from rollchat.providers.anthropic import request_params as anthropic_params
from rollchat.providers.base import (
    ChatRequest,
    Done,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolSpec,
    UsageEvent,
)
from rollchat.providers.openai import request_params as openai_params
from rollchat.storage.store import SessionStore
from rollchat.tools import Tool
from tests.drive import turn as run_turn
from tests.engine.test_engine import Scripted

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


def _call(i: str, name: str, **args: object) -> StreamEvent:
    return ToolCallEvent(ToolCall(i, name, args))


def _tools() -> Mapping[str, Tool]:
    def spec(name: str) -> ToolSpec:
        return ToolSpec(name, f"the {name} tool", {"type": "object", "properties": {}})

    def fail(_: Mapping[str, object]) -> str:
        raise ValueError("no such file")

    return {"read": Tool(spec("read"), lambda a: f"contents of {a.get('path')}\n" * 3,
                         read_only=True),
            "log": Tool(spec("log"), lambda a: "".join(f"line {i}: ok\n" for i in range(3000)),
                        read_only=True),
            "fail": Tool(spec("fail"), fail, read_only=True)}


def _engine(provider: Scripted) -> Engine:
    settings = EngineSettings(provider, model="m", system="sys", max_output_tokens=100,
                              temperature=None, retry=RetryPolicy(max_retries=0),
                              tools=tuple(_tools().values()), sleep=lambda s: None)
    return Engine(settings, count=lambda t: len(t) // 4 + 1, tool_room=lambda: 500)


SCRIPTS: list[list[StreamEvent | BaseException]] = [
    # turn 1: text, two calls at once (one fails), more text and a call, then the answer
    [TextDelta("Let me look "), TextDelta("at both."), _call("c1", "read", path="a.py"),
     _call("c2", "fail", path="b.py"), UsageEvent(Usage(50, 5)), Done()],
    [ThinkingDelta("b.py failed; "), ThinkingDelta("the log may say why"),  # a reasoning field
     TextDelta("One failed; the log next."), _call("c3", "log"), UsageEvent(Usage(80, 5)),
     Done()],
    [_call("c4", "read", path="c.py"), UsageEvent(Usage(90, 5)), Done()],  # no text first
    [TextDelta("Both read; the log is long."), UsageEvent(Usage(99, 5)), Done()],
    # turn 2: interrupted while the answer streams
    [TextDelta("Partial "), KeyboardInterrupt()],
    # turn 3: a plain answer after a <think> block, its tags split across deltas
    [TextDelta("<thi"), TextDelta("nk>\nall read, all good</th"), TextDelta("ink>\n\nDone."),
     UsageEvent(Usage(120, 2)), Done()],
]


def _chat(tmp_path: Path) -> tuple[Engine, Scripted, list[Turn], list[Turn]]:
    provider = Scripted(*SCRIPTS)
    engine = _engine(provider)
    store = SessionStore(tmp_path)
    live = store.new_session(agent_key="a", agent="Agent", agent_path="x", model="m",
                             provider="scripted", now=T0, resumed_from=None,
                             previous_session=None)
    turns = []
    for n, (text, block) in enumerate((("read a.py and b.py", "<context>Now: noon</context>"),
                                       ("go on", ""), ("thanks", "")), 1):
        turn = run_turn(engine.chat(text, block), lambda e: None)
        turn = Turn(turn.kind, n, turn.started, turn.user, turn.blocks, turn.status,
                    turn.elapsed, turn.usage, error=turn.error, context_block=block)
        live.append_turn(turn, "Agent")
        turns.append(turn)
    saved = store.load_transcript(live.session_id).turns
    return engine, provider, turns, list(saved)


def test_the_blocks_keep_the_order_things_happened_in(tmp_path: Path) -> None:
    _, _, turns, saved = _chat(tmp_path)
    assert saved == turns
    first = saved[0].blocks
    assert [type(b).__name__ for b in first] == [
        "Text", "ToolUse", "ToolUse", "ToolResult", "ToolResult", "Thinking", "Text", "ToolUse",
        "ToolResult", "ToolUse", "ToolResult", "Text"]
    assert first[5] == Thinking("b.py failed; the log may say why")
    assert first[0] == Text("Let me look at both.")
    assert isinstance(first[4], ToolResult) and first[4].is_error  # the failing call
    assert "ValueError: no such file" in first[4].content
    log = first[8]
    assert isinstance(log, ToolResult) and log.sent_keep is not None  # cut to fit
    assert log.content.count("\n") == 3000  # the transcript keeps it whole
    assert saved[1].status == "interrupted" and saved[1].blocks == (Text("Partial "),)
    assert saved[2].blocks == (Thinking("all read, all good"), Text("Done."))
    assert saved[2].assistant == "Done."
    assert isinstance(first[1], ToolUse) and first[1].call.arguments == {"path": "a.py"}


def test_requests_rebuilt_from_the_saved_turns_are_the_requests_sent(tmp_path: Path) -> None:
    engine, provider, _, saved = _chat(tmp_path)
    context = WorkingContext("sys")  # the engine's context's settings: older results shortened
    for message in (m for turn in saved for m in turn_messages(turn)):
        context.append(message)
    assert context.messages == engine.context.messages
    # thinking is kept in the file but never sent back, as the answer or otherwise
    assert not any("the log may say why" in repr(r.messages) for r in provider.requests)
    rebuilt = context.messages
    last = provider.requests[-1]
    again = ChatRequest(last.model, last.system, tuple(rebuilt[:-1]), last.max_output_tokens,
                        last.temperature, last.tools, last.purpose, last.cache_prefix_messages)
    assert again == last
    for params in (anthropic_params, openai_params):
        assert json.dumps(params(again), sort_keys=True) == json.dumps(params(last),
                                                                         sort_keys=True)
    first = WorkingContext("sys")
    for message in turn_messages(saved[0]):
        first.append(message)
        for request in provider.requests[1:4]:  # each round of turn 1 began so
            if len(request.messages) == len(first.messages):
                assert list(request.messages) == first.messages
