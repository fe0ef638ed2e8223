"""Session files written straight from the transcript model, for tests of the commands that
read them (pick, show, export)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from rollchat.domain import SessionHeader, Summary, Transcript, Turn, Usage, answer_blocks
from rollchat.storage.transcript import render

BASE = datetime(2026, 5, 1, 9, 0, tzinfo=timezone.utc)


def write_session(sessions: Path, session_id: str, questions: list[str], *,
                  minutes: int = 0, parent: str | None = None, forked: bool = False,
                  summary: Summary | None = None, answer: str = "Noted.",
                  title: str | None = None) -> Path:
    """``sessions/<session_id>.md``: one query per question, ``minutes`` after BASE, linked to
    ``parent`` (Resumed From, or Forked From), finalized with ``summary`` when given, its
    header's Title ``title``."""
    when = BASE + timedelta(minutes=minutes)
    turns = tuple(Turn(kind="query", number=n, started=when + timedelta(seconds=n), user=q,
                       blocks=answer_blocks(f"{answer} ({n})"), elapsed=0.5, usage=Usage(10 * n, 5))
                  for n, q in enumerate(questions, 1))
    header = SessionHeader(
        session_id=session_id, date=when, agent="Assistant", agent_path="config:assistant",
        model="offline-1", provider="offline", resumed_from=parent,
        previous_session=f"{parent}.md" if parent else None,
        total_queries=len(turns), total_tokens=sum(t.usage.total for t in turns),
        forked=forked, title=title)
    sessions.mkdir(parents=True, exist_ok=True)
    path = sessions / f"{session_id}.md"
    path.write_text(render(Transcript(header, turns, summary)), encoding="utf-8")
    return path


def summary(*, topics: tuple[str, ...] = (), decisions: tuple[str, ...] = (),
            pending: tuple[str, ...] = (), background: str = "Initial session.") -> Summary:
    return Summary(background=background, topics=topics, decisions=decisions, pending=pending)
