"""Resuming a large session that has no summary (a crashed transcript): the job is estimated
before any model call, a large one asks first, and the cheap path (the model summarizes the
last part, the rest is summarized locally) makes one call instead of dozens."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from rollchat.compaction.saved import CONFIRM_CALLS
from rollchat.domain import Turn, Usage, answer_blocks
from rollchat.events import Event, Notice
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import parse
from tests.compaction.test_autocompact import TOPICS, FakeProvider, build_app
from tests.drive import drain
from tests.e2e import run_piped

WHEN = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)


def crashed_session(root: Path, turns: int, agent: str = "Rollo", key: str = "rollo",
                    model: str = "test-model") -> str:
    """A session file with ``turns`` queries and no summary, as a crash leaves it."""
    store = SessionStore(root)
    store.ensure()
    live = store.new_session(agent_key=key, agent=agent, agent_path=f"config:{key}",
                             model=model, provider="openai", now=WHEN)
    for i in range(turns):
        topic = TOPICS[i % len(TOPICS)]
        answer = answer_blocks(f"Noted about {topic}: kept, with a test to write on Thursday.")
        live.append_turn(Turn("query", i + 1, WHEN, f"[{i}] what about {topic}? We decided to "
                              f"keep {topic} as it is.", answer, usage=Usage(30, 20)), agent)
    return live.session_id


def resume(tmp_path: Path, answer: bool) -> tuple[FakeProvider, list[Event], list[str]]:
    provider = FakeProvider()
    built = build_app(tmp_path, provider)
    sid = crashed_session(tmp_path / "sessions", 300)
    asked: list[str] = []

    def confirm(question: str) -> bool:
        asked.append(question)
        return answer

    built.session.confirm = confirm
    events: list[Event] = []
    drain(built.session.resume(sid), events.append)
    return provider, events, asked


def test_a_large_unsummarized_session_asks_and_the_cheap_path_makes_one_call(
        tmp_path: Path) -> None:
    provider, events, asked = resume(tmp_path, answer=False)
    [question] = asked
    assert "300 turns" in question and "model calls" in question and "tokens" in question
    calls = int(question.split(" takes ")[1].split()[0])
    assert calls > CONFIRM_CALLS
    assert len(provider.of("summary")) == 1  # the last part only
    notices = " ".join(e.text for e in events if isinstance(e, Notice))
    assert "summarized locally" in notices
    # the last turns went to the model; the summary is saved into the crashed file, labelled
    last = provider.of("summary")[0].messages[-1].content
    assert "[299]" in last and "[0]" not in last
    [path] = [p for p in (tmp_path / "sessions").glob("*.md")
              if parse(p.read_text()).header.resumed_from is None]
    saved = parse(path.read_text())
    assert saved.summary is not None and saved.summary.fallback  # partly local, said so
    assert len(provider.of("restore")) == 1  # and the session was resumed


def test_answering_yes_summarizes_everything_with_the_model(tmp_path: Path) -> None:
    provider, _, asked = resume(tmp_path, answer=True)
    calls = int(asked[0].split(" takes ")[1].split()[0])
    assert len(provider.of("summary")) == calls  # the estimate was the real number of calls


def test_a_small_unsummarized_session_does_not_ask(tmp_path: Path) -> None:
    provider = FakeProvider()
    built = build_app(tmp_path, provider)
    sid = crashed_session(tmp_path / "sessions", 4)
    built.session.confirm = lambda q: (_ for _ in ()).throw(AssertionError(q))
    drain(built.session.resume(sid))
    assert len(provider.of("summary")) == 1


def test_without_a_terminal_the_cheap_path_is_taken_and_said(tmp_path: Path) -> None:
    crashed_session(tmp_path / "sessions", 3000, agent="Assistant", key="assistant",
                    model="offline")
    done = run_piped(tmp_path, "exit\n", "--resume", "1", timeout=240)
    assert done.returncode == 0, done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    assert "model calls" in said and "Refused without a terminal; pass --yes" in said
    assert "summarized locally" in said
    assert "Restoring context" in said
