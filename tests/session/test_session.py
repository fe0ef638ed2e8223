"""The session core with no terminal anywhere: the offline model, the in-memory store, and the
events each flow yields (a turn, a tool call, compact, resume, automatic compaction, exit)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

import pytest

from rollchat.config.settings import AgentConfig, Config, SessionConfig
from rollchat.engine.core import EngineSettings
from rollchat.events import (
    AnswerStarted,
    CompactionFinished,
    CompactionStarted,
    Ended,
    Event,
    Notice,
    Planned,
    Saved,
    SummaryFinished,
    SummaryStarted,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from rollchat.providers.base import ChatRequest, RetryPolicy, StreamEvent, TextDelta
from rollchat.providers.offline import OfflineProvider
from rollchat.session.core import Session
from rollchat.storage.store import InMemoryStore, Store
from rollchat.tools import ARCHIVE_TOOL_NAME

SYSTEM = "You are a test assistant."


class Recording:
    """The offline model, recording every request."""

    def __init__(self) -> None:
        self.inner = OfflineProvider()
        self.requests: list[ChatRequest] = []

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        self.requests.append(request)
        return self.inner.stream(request)

    def of(self, purpose: str) -> list[ChatRequest]:
        return [r for r in self.requests if r.purpose == purpose]


def make(window: int = 128_000, store: Store | None = None, name: str = "Assistant",
         **session: object) -> tuple[Session, Store, Recording]:
    provider = Recording()
    agent = AgentConfig(key="assistant", name=name, provider="offline",
                        system_prompt=SYSTEM, max_output_tokens=512)
    config = Config(agents={"assistant": agent},
                    session=replace(SessionConfig(), **session))  # type: ignore[arg-type]
    store = store or InMemoryStore()
    engine = EngineSettings(provider, model="offline", system=SYSTEM,
                    max_output_tokens=512, temperature=None, retry=RetryPolicy(0, 0.0, 0.0))
    core = Session(config=config, agent=agent, engine_settings=engine, summary_provider=provider,
                   summary_model="offline", provider_name="offline", store=store,
                   confirm=lambda question: False, context_window=window)
    return core, store, provider


def run(flow: Iterable[Event]) -> list[Event]:
    return list(flow)


def of(events: list[Event], kind: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, kind)]


def test_a_turn_streams_saves_then_finishes() -> None:
    core, store, _ = make()
    events = run(core.turn("we decided to use redis for the cache"))
    kinds = [type(e).__name__ for e in events]
    assert kinds[:2] == ["Planned", "AnswerStarted"] and kinds[-1] == "TurnFinished"
    [planned] = of(events, Planned)
    assert not planned.compact and planned.reason == "nothing to compact yet"
    assert kinds.index("Saved") < kinds.index("TurnFinished")  # on disk before "done"
    text = "".join(e.text for e in of(events, TextDelta))
    [finished] = of(events, TurnFinished)
    assert finished.turn.assistant == text and finished.turn.status == "ok"
    assert finished.turn.number == 1 and finished.hint is None
    [info] = store.list_sessions().sessions
    transcript = store.load_transcript(info.session_id)
    assert [t.user for t in transcript.turns] == ["we decided to use redis for the cache"]
    assert transcript.turns[0].assistant == text
    run(core.turn("and postgres for the rest"))  # the header's totals are kept up to date
    h = store.load_transcript(info.session_id).header
    assert (h.total_queries, h.total_tokens) == (2, core.state.billed) and h.total_tokens > 0
    assert h.context_tokens == core.engine.context.last_prompt_tokens > 0


def test_compact_summarizes_and_continues_in_a_linked_child() -> None:
    core, store, provider = make()
    run(core.turn("we decided to use redis for the cache"))
    run(core.turn("TODO: write tests for cache.py"))
    parent = core.state.session_id
    events = run(core.compact())
    assert of(events, SummaryStarted) and of(events, SummaryFinished)
    [summary] = of(events, SummaryFinished)
    assert summary.fallback is None
    assert any("redis" in d for d in summary.summary.decisions)
    [started] = of(events, CompactionStarted)
    assert not started.automatic
    [finished] = of(events, CompactionFinished)
    assert finished.parent_id == parent and finished.kept == 0
    restored = [e.turn for e in of(events, TurnFinished)]
    assert [t.kind for t in restored] == ["restored"]
    # the parent holds its summary; the child links to it once its first query is saved
    assert store.load_transcript(parent or "").summary == summary.summary
    assert core.state.resumed_from == parent and core.state.session_id is None
    run(core.turn("and what about the port?"))
    child = store.load_transcript(core.state.session_id or "")
    assert child.header.resumed_from == parent
    assert [t.kind for t in child.turns] == ["restored", "query"]
    # what the model receives now: the restoration exchange, then the new turn only
    last = provider.of("chat")[-1]
    assert last.messages[0].content.startswith("CONTEXT RESTORATION")
    assert "write tests for cache.py" not in " ".join(m.content for m in last.messages[2:])


def test_a_tool_call_and_its_result_are_events_and_saved() -> None:
    core, store, _ = make()
    run(core.turn("we decided to use redis for the cache"))
    run(core.compact())
    assert ARCHIVE_TOOL_NAME in core.engine.tools
    events = run(core.turn("what did we say about zanzibar quokkas?"))
    [call] = of(events, ToolStarted)
    [result] = of(events, ToolFinished)
    assert call.call.name == ARCHIVE_TOOL_NAME and result.call == call.call
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("ToolStarted") < kinds.index("ToolFinished") < kinds.index("TurnFinished")
    saved = store.load_transcript(core.state.session_id or "").turns[-1]
    assert [t.call.name for t in saved.tools] == [ARCHIVE_TOOL_NAME]
    assert saved.tools[0].result == result.result


def test_resume_restores_from_the_summary_and_asks_before_another_agent() -> None:
    core, store, _ = make()
    run(core.turn("we decided to use redis for the cache"))
    first = core.state.session_id
    run(core.exit())
    again, _, provider = make(store=store)
    events = run(again.resume("1"))
    assert any(isinstance(e, Notice) and e.text.startswith("Found: ") for e in events)
    [ack] = [e.turn for e in of(events, TurnFinished)]
    assert ack.kind == "restored" and "redis" in ack.assistant.lower()
    assert again.state.resumed_from == first
    [restore] = provider.of("restore")
    assert "redis" in restore.messages[0].content
    third, _, _ = make(store=store, name="Other")
    events = run(third.resume(first or ""))
    assert [e.text for e in of(events, Notice)] == ["Resume cancelled."]


def test_automatic_compaction_in_a_small_window_keeps_the_task() -> None:
    core, store, provider = make(window=4_000, keep_recent_turns=1)
    words = " ".join(f"word{i}" for i in range(120))
    run(core.turn("The task: migrate the billing database to postgres 16."))
    started: list[CompactionStarted] = []
    for i in range(12):
        events = run(core.turn(f"step {i}: {words}"))
        started += of(events, CompactionStarted)
        if started:
            break
    assert started and started[0].automatic and started[0].estimate > core.budget.tokens
    [finished] = of(events, CompactionFinished)
    assert finished.automatic and finished.kept <= 1
    assert finished.tokens_after < finished.tokens_before
    # the message that triggered it was still sent, after the compaction
    last = provider.of("chat")[-1]
    assert last.messages[-1].content.startswith(f"step {i}:")
    assert "billing database" in last.messages[0].content  # the summary kept the task
    sessions = store.list_sessions().sessions
    assert len(sessions) == 2 and any(s.has_summary for s in sessions)


def test_exit_saves_a_summary_and_reports_the_figures() -> None:
    core, store, _ = make()
    run(core.turn("we decided to use redis for the cache"))
    events = run(core.exit())
    [end] = of(events, Ended)
    assert end.queries == 1 and end.session_id == core.state.session_id and not end.save_failed
    assert of(events, Saved)
    assert store.load_transcript(end.session_id or "").summary is not None
    assert run(core.exit()) == []  # twice is harmless


def test_an_empty_session_exits_without_a_file() -> None:
    core, store, _ = make()
    [end] = run(core.exit())
    assert isinstance(end, Ended) and end.session_id is None
    assert not store.list_sessions().sessions


def test_a_message_too_big_for_the_window_is_kept_not_sent() -> None:
    core, store, provider = make(window=2_000)
    events = run(core.turn("word " * 5_000))
    [finished] = of(events, TurnFinished)
    assert finished.turn.status == "unanswered" and "not sent" in (finished.turn.error or "")
    assert finished.hint is not None and "Shorten" in finished.hint
    assert provider.requests == [] and not of(events, AnswerStarted)
    saved = store.load_transcript(core.state.session_id or "").turns
    assert saved[0].status == "unanswered"


@pytest.mark.parametrize("flow", ["turn", "compact", "exit"])
def test_no_flow_prints(flow: str, capsys: pytest.CaptureFixture[str]) -> None:
    core, _, _ = make()
    run(core.turn("hello there, let's talk about caching"))
    run(getattr(core, flow)(*(["more"] if flow == "turn" else [])))
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
