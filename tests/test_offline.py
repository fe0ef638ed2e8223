"""The offline model: deterministic streaming chat, tool use, summaries, acknowledgments."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest

import rollchat.providers.offline as offline
from rollchat.compaction import build_summary_request, parse_summary_reply
from rollchat.domain import Message, Summary, ToolCall, Turn
from rollchat.providers.base import (
    ChatRequest,
    Done,
    StreamEvent,
    TextDelta,
    ToolCallEvent,
    ToolSpec,
    UsageEvent,
)
from rollchat.providers.offline import OfflineProvider
from rollchat.restore import build_restoration_prompt, restoration_request

ARCHIVE = ToolSpec("session_archive_read", "Read the previous session's transcript.")
SUMMARY = Summary("Initial session.", ("Rate limiter design for src/limiter.py",),
                  ("Use a token bucket",), ("Write the tests",))
WHEN = datetime(2026, 11, 22, 14, 30, tzinfo=timezone.utc)


def chat(*messages: Message, tools: tuple[ToolSpec, ...] = ()) -> list[StreamEvent]:
    request = ChatRequest("offline", "You are a helpful assistant.", messages, tools=tools)
    return list(OfflineProvider().stream(request))


def text_of(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def restored_history() -> tuple[Message, ...]:
    prompt = build_restoration_prompt(session_id="a_1", date=WHEN, queries=3, tokens=2300,
                                      parent_of_parent=None, file_name="a_1.md",
                                      summary=SUMMARY, archive_tool=True)
    return (Message("user", prompt), Message("assistant", "Ready to continue!"))


def test_same_request_same_events_streamed_in_words_with_usage() -> None:
    messages = (Message("user", "Tell me about the parser in transcript.py please"),)
    first, second = chat(*messages), chat(*messages)
    assert first == second
    deltas = [e for e in first if isinstance(e, TextDelta)]
    assert len(deltas) > 5 and all(d.text.strip() for d in deltas)
    usage = [e for e in first if isinstance(e, UsageEvent)]
    assert len(usage) == 1 and usage[0].usage.input_tokens > 10
    assert usage[0].usage.output_tokens > 5
    assert first[-1] == Done("end")


def test_short_greeting_gets_short_greeting() -> None:
    reply = text_of(chat(Message("user", "hi")))
    assert reply.startswith("Hello!") and len(reply.split()) < 25
    assert "offline" in reply


def test_quotes_earlier_user_text_about_a_word_in_the_question() -> None:
    reply = text_of(chat(
        Message("user", "We store sessions in Redis with a 30 minute TTL."),
        Message("assistant", "Noted."),
        Message("user", "Something unrelated about the weather."),
        Message("assistant", "Okay."),
        Message("user", "Should the redis TTL be longer?"),
    ))
    assert 'Earlier you said: "We store sessions in Redis with a 30 minute TTL."' in reply
    assert "weather" not in reply
    assert "**redis**" in reply and "offline model" in reply


def test_word_delay_sleeps_between_words(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(offline.time, "sleep", slept.append)
    events = list(OfflineProvider(word_delay=0.5).stream(
        ChatRequest("offline", "", (Message("user", "explain the compaction policy"),))))
    words = [e for e in events if isinstance(e, TextDelta)]
    assert slept == [0.5] * (len(words) - 1)


def test_calls_archive_tool_for_something_only_the_parent_has() -> None:
    events = chat(*restored_history(), Message("user", "What was the kubernetes namespace?"),
                  tools=(ARCHIVE,))
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert len(calls) == 1 and calls[0].name == "session_archive_read"
    assert calls[0].arguments == {"query": "kubernetes namespace"}
    assert events[-1] == Done("tool_use")


def test_no_tool_call_without_the_tool_or_when_the_summary_knows() -> None:
    question = Message("user", "What was the kubernetes namespace?")
    assert not any(isinstance(e, ToolCallEvent) for e in chat(*restored_history(), question))
    reply = text_of(chat(*restored_history(), Message("user", "Why a token bucket?"),
                         tools=(ARCHIVE,)))
    assert "The summary of our previous session says" in reply and "token bucket" in reply


def test_answers_from_the_tool_result() -> None:
    call = ToolCall("offline_call_3", "session_archive_read", {"query": "kubernetes namespace"})
    events = chat(
        *restored_history(),
        Message("user", "What was the kubernetes namespace?"),
        Message("assistant", "Let me look.", (call,)),
        Message("tool", "## Query 2\nYou: deploy to the kubernetes namespace rollchat-prod\n",
                tool_call_id=call.id, name=call.name),
        tools=(ARCHIVE,),
    )
    assert not any(isinstance(e, ToolCallEvent) for e in events)
    assert "rollchat-prod" in text_of(events)


def test_summary_purpose_writes_a_valid_block() -> None:
    turns = [Turn("query", 1, WHEN, "Let's use SQLite for the store. What about backups?",
                  "We'll use WAL mode.")]
    request = build_summary_request(turns, parent_summary=SUMMARY, focus=None,
                                    model="offline", max_words=150, max_output_tokens=500)
    reply = text_of(list(OfflineProvider().stream(request)))
    summary = parse_summary_reply(reply, max_words=150)
    assert "Rate limiter design" in summary.background
    assert any("SQLite" in d for d in summary.decisions)
    assert not summary.fallback


def test_restore_purpose_acknowledges_in_two_to_six_sentences() -> None:
    prompt = restored_history()[0].content
    request = restoration_request(prompt, system="sys", model="offline", max_output_tokens=300)
    reply = text_of(list(OfflineProvider().stream(request)))
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", reply.strip()) if s]
    assert 2 <= len(sentences) <= 6
    assert "Rate limiter design" in reply and "token bucket" in reply
    assert "Ready to continue" in reply
