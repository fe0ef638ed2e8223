"""The offline model: deterministic streaming chat, tool use, summaries, acknowledgments."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest

import rollchat.providers.offline as offline
from rollchat.compaction import extractive
from rollchat.compaction.request import build_summary_request, parse_summary_reply
from rollchat.compaction.restore import build_restoration_prompt
from rollchat.domain import Message, Summary, ToolCall, Turn, answer_blocks
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
from rollchat.text import phrases

ARCHIVE = ToolSpec("session_archive_read", "Read the previous session's transcript.")
SUMMARY = Summary("Initial session.", ("Rate limiter design for src/limiter.py",),
                  ("Use a token bucket",), ("Write the tests",))
WHEN = datetime(2026, 11, 22, 14, 30, tzinfo=timezone.utc)


def restoration_request(prompt: str, *, system: str, model: str,
                        max_output_tokens: int) -> ChatRequest:
    """The request Engine.restore sends: the restoration prompt alone, purpose "restore"."""
    return ChatRequest(model=model, system=system, messages=(Message("user", prompt),),
                       max_output_tokens=max_output_tokens, purpose="restore")


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
                  answer_blocks("We'll use WAL mode."))]
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


# ---------------------------------------------------------------- replies a person can read


def converse(*lines: str) -> list[Turn]:
    """Turns of a conversation with the offline model, each reply given the history."""
    history: list[Message] = []
    turns: list[Turn] = []
    for number, line in enumerate(lines, 1):
        history.append(Message("user", line))
        reply = text_of(chat(*history))
        history.append(Message("assistant", reply))
        turns.append(Turn("query", number, WHEN, line, answer_blocks(reply)))
    return turns


def test_statement_is_restated_with_one_offline_note_and_no_noise() -> None:
    reply = text_of(chat(Message("user", "My favourite editor is helix, I've used it for years.")))
    assert reply.startswith("Noted: your favourite editor is helix, you've used it for years.")
    assert reply.count("offline") == 1 and "first time" not in reply
    assert "You asked" not in reply


def test_question_with_nothing_earlier_says_so_once() -> None:
    reply = text_of(chat(Message("user", "How do I rotate the JWT keys?")))
    assert reply.startswith("You asked about **rotate**, **jwt** and **keys**.")
    assert "Nothing earlier in our conversation mentions it" in reply
    assert reply.count("offline") == 2  # the sentence above and the one note


def test_every_line_of_a_chat_reply_is_recognised_as_meta_except_quotes() -> None:
    turns = converse("we decided to use redis for the cache", "what about the redis TTL?",
                     "tell me about sharding")
    for t in turns:
        lines = [line for line in t.assistant.splitlines() if line.strip()]
        assert lines and all(phrases.is_meta_line(line) for line in lines)


def test_summary_of_an_offline_conversation_has_only_the_users_content() -> None:
    turns = converse("hi", "we decided to use redis for the cache",
                     "the rate limit should be 100 per minute", "what about the redis TTL?",
                     "TODO: write integration tests for src/limiter.py")
    request = build_summary_request(turns, parent_summary=None, focus="keep the redis details",
                                    model="offline", max_words=300, max_output_tokens=500)
    summary = parse_summary_reply(text_of(list(OfflineProvider().stream(request))),
                                  max_words=300)
    assert summary.decisions == ("We decided to use redis for the cache",
                                 "The rate limit should be 100 per minute")
    assert summary.pending == ("TODO: write integration tests for src/limiter.py",)
    assert summary.topics[:2] == ("Focus on the redis details: The redis TTL",
                                  "Use redis for the cache")
    assert "Write integration tests for src/limiter.py" in summary.topics
    everything = " ".join((*summary.topics, *summary.decisions, *summary.pending)).lower()
    for noise in ("asked", "first time", "offline", "noted", "earlier", "hello"):
        assert noise not in everything


def test_acknowledgment_names_everything_without_labels_or_noise() -> None:
    summary = Summary("Initial session.", ("Use redis for the cache", "Write integration tests"),
                      ("We decided to use redis for the cache",),
                      ("Last request: how long should the redis TTL be?", "None"))
    prompt = build_restoration_prompt(session_id="a_1", date=WHEN, queries=4, tokens=900,
                                      parent_of_parent=None, file_name="a_1.md",
                                      summary=summary, archive_tool=False)
    request = restoration_request(prompt, system="sys", model="offline", max_output_tokens=300)
    reply = text_of(list(OfflineProvider().stream(request)))
    assert reply == (
        "I've reviewed the summary of our previous session. Main topics: Use redis for the cache; "
        "Write integration tests. Decided: We decided to use redis for the cache. Still open: "
        "how long should the redis TTL be. Ready to continue where we left off.")


# ---------------------------------------------------------------- recall questions (QA session)


def test_what_did_i_just_say_quotes_the_previous_message() -> None:
    reply = text_of(chat(Message("user", "hi"),
                         Message("assistant", "Hello! I'm the offline model."),
                         Message("user", "what did I just say?")))
    assert reply.startswith('You just said: "hi"')
    assert reply.count("offline") == 1 and "can't pick out" not in reply
    first = text_of(chat(Message("user", "What did I just say?")))
    assert first.startswith("You haven't said anything before this")


def test_what_have_we_talked_about_lists_the_topics_oldest_first() -> None:
    history: list[Message] = []
    for line in ("hi", "Let's use SQLite for the session store.",
                 "How do we back up the WAL files?", "ok thanks"):
        history += [Message("user", line), Message("assistant", text_of(chat(
            *history, Message("user", line))))]
    reply = text_of(chat(*history, Message("user", "what have we talked about so far?")))
    assert reply.startswith("So far we've talked about: Use SQLite for the session store; "
                            "How do we back up the WAL files. Decided: Let's use SQLite")
    assert "thanks" not in reply and "Hello" not in reply
    alias = text_of(chat(*history, Message("user", "remind me what we said")))
    assert alias.split("\n")[0] == reply.split("\n")[0]
    nothing = text_of(chat(Message("user", "hi"), Message("assistant", "Hello!"),
                           Message("user", "What have we discussed?")))
    assert nothing.startswith("We haven't talked about anything specific yet")


def test_overview_after_a_restore_names_the_previous_topics() -> None:
    reply = text_of(chat(*restored_history(), Message("user", "what did we talk about?"),
                         tools=(ARCHIVE,)))
    assert "Before this session: Rate limiter design for src/limiter.py." in reply
    assert not any(isinstance(e, ToolCallEvent) for e in chat(
        *restored_history(), Message("user", "what did we talk about?"), tools=(ARCHIVE,)))


def test_recall_replies_are_meta_lines_and_never_summary_items() -> None:
    turns = converse("We store sessions in Redis with a 30 minute TTL.", "what did I just say?",
                     "what have we talked about?")
    for t in turns[1:]:
        assert all(phrases.is_meta_line(line) for line in t.assistant.splitlines()
                   if line.strip())
    summary = extractive.extractive_summary(turns, parent_summary=None, focus=None,
                                            max_words=200, fallback=False)
    assert summary.topics == ("We store sessions in Redis with a 30 minute TTL",)


def test_words_and_restatements_ignore_code_tables_and_markers() -> None:
    table = ("Here's the parser output:\n\n| field | meaning |\n|---|---|\n"
             "| tokens | how many tokens the parser saw |\n\nWhy is the token count zero?")
    reply = text_of(chat(Message("user", table)))
    assert reply.startswith("You asked about **parser**, **output**, **token**, **count** and "
                            "**zero**.")
    code = "```python\ndef parse(x):\n    return x\n```\nthis function returns None sometimes"
    assert text_of(chat(Message("user", code))).startswith(
        "Noted: this function returns None sometimes.\n")
    marker = text_of(chat(Message("user", "Hello <!-- SESSION_SUMMARY_START --> x")))
    assert marker.startswith("Hello!") and "SUMMARY" not in marker


def test_acknowledgment_skips_noise_items_of_a_model_summary() -> None:
    summary = Summary("Initial session.", ("What did I just say", "There", "Parser table fix"),
                      ("None",), ("first line",))
    prompt = build_restoration_prompt(session_id="a_1", date=WHEN, queries=4, tokens=900,
                                      parent_of_parent=None, file_name="a_1.md",
                                      summary=summary, archive_tool=False)
    request = restoration_request(prompt, system="sys", model="offline", max_output_tokens=300)
    reply = text_of(list(OfflineProvider().stream(request)))
    assert reply == ("I've reviewed the summary of our previous session. Main topics: Parser "
                     "table fix. Ready to continue where we left off.")


# ---------------------------------------------------------------- streaming speed


def summary_events(turn_count: int, delay: float,
                   slept: list[float]) -> list[StreamEvent]:
    turns = [Turn("query", n, WHEN, f"Let's use option {n} for module_{n}.py. TODO: test "
                  f"module_{n}.py with case {n}.", answer_blocks("ok"))
             for n in range(1, turn_count + 1)]
    request = build_summary_request(turns, parent_summary=None, focus=None, model="offline",
                                    max_words=300, max_output_tokens=800)
    return list(OfflineProvider(word_delay=delay).stream(request))


def test_summary_streams_line_by_line_within_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(offline.time, "sleep", slept.append)
    events = summary_events(40, 0.02, slept)
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    words = len("".join(deltas).split())
    assert words > 150 and len(deltas) < words / 4
    assert all(d.count("\n") >= 1 for d in deltas[:-1])  # whole lines
    assert len(slept) == len(deltas) - 1 and sum(slept) <= offline.SUMMARY_SECONDS + 1e-9
    # 40 decisions and 40 to-dos: all kept, over the 300 words asked for (topics dropped)
    assert "dropped" in "".join(deltas)
    parse_summary_reply("".join(deltas), max_words=600)


def test_short_summary_keeps_a_per_line_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pty test presses Ctrl-C during the exit summary: a short one still takes a while."""
    slept: list[float] = []
    monkeypatch.setattr(offline.time, "sleep", slept.append)
    deltas = [e for e in summary_events(1, 0.03, slept) if isinstance(e, TextDelta)]
    per_line = min(0.03 * offline.LINE_WORDS, offline.SUMMARY_SECONDS / len(deltas))
    assert per_line > 0.05 and slept == [pytest.approx(per_line)] * (len(deltas) - 1)


# ---------------------------------------------------------------- second QA pass


def test_restatement_swaps_verbs_with_pronouns() -> None:
    reply = text_of(chat(Message("user", "I am building a tokenizer in Rust for a markdown "
                                         "parser")))
    assert reply.startswith("Noted: you are building a tokenizer in Rust for a markdown parser.")
    assert "you am" not in reply
    assert offline._restate("I was tired, and I'm done; am I late?") == (
        "you were tired, and you're done; are you late?")
    assert offline._restate("Was I clear about my plan to ask me later") == (
        "were you clear about your plan to ask you later.")


def test_focused_compact_after_recall_questions_keeps_the_main_topic() -> None:
    turns = converse("I am building a tokenizer in Rust for a markdown parser",
                     "We decided to use the logos crate for lexing", "what did I just say?",
                     "Remind me: what crate did we pick?")
    assert "logos crate" in turns[3].assistant
    request = build_summary_request(turns, parent_summary=None, focus="the lexer choice",
                                    model="offline", max_words=300, max_output_tokens=500)
    summary = parse_summary_reply(text_of(list(OfflineProvider().stream(request))),
                                  max_words=300)
    assert summary.topics == ("Focus on the lexer choice: Use the logos crate for lexing",
                              "Building a tokenizer in Rust for a markdown parser")
    assert summary.pending == ()
    everything = " ".join((*summary.topics, *summary.decisions, *summary.pending))
    assert "not mentioned" not in everything and "Remind me" not in everything
    prompt = build_restoration_prompt(session_id="a_1", date=WHEN, queries=4, tokens=900,
                                      parent_of_parent=None, file_name="a_1.md",
                                      summary=summary, archive_tool=False)
    request = restoration_request(prompt, system="sys", model="offline", max_output_tokens=300)
    reply = text_of(list(OfflineProvider().stream(request)))
    assert "Building a tokenizer in Rust" in reply and "logos crate" in reply
    assert "Still open" not in reply and "Remind me" not in reply


def test_acknowledgment_keeps_the_oldest_topic_among_many() -> None:
    summary = Summary("Initial session.", ("Deploy on Friday", "Cache the parsed tables",
                                           "Write the lexer tests",
                                           "Building a tokenizer in Rust"), (), ())
    reply = offline._acknowledgment(summary)
    assert "Main topics: Deploy on Friday; Building a tokenizer in Rust; Cache the parsed " \
           "tables." in reply


@pytest.mark.parametrize("text", [
    "I like teal", "Lets talk about the logo colours, I like teal.",
    "Write a haiku about autumn leaves", "How do I center a div in CSS?",
    "The staging box has 64 GB now."])
def test_no_archive_lookup_for_statements_or_new_requests(text: str) -> None:
    events = chat(*restored_history(), Message("user", text), tools=(ARCHIVE,))
    assert not any(isinstance(e, ToolCallEvent) for e in events)


@pytest.mark.parametrize("text", [
    "Which kubernetes namespace did we pick?", "Remind me, what was the deploy target?",
    "where is the flowerpot?", "Did we settle the retry budget earlier?"])
def test_archive_lookup_when_asked_about_earlier_work(text: str) -> None:
    events = chat(*restored_history(), Message("user", text), tools=(ARCHIVE,))
    assert [e.call.name for e in events if isinstance(e, ToolCallEvent)] == [
        "session_archive_read"]
