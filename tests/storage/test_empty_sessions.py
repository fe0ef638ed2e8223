"""A session with nothing in it (its header only: rollchat killed right after the first Enter,
between the file's creation and its first block) is listed after every other session and is
never the one ``rollchat -c`` continues."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from rollchat.domain import Turn, answer_blocks
from rollchat.storage.listing import numbered
from rollchat.storage.store import SessionStore
from tests.e2e import clean_env, run_piped, write_config

NOW = datetime(2026, 11, 25, 23, 0, tzinfo=timezone.utc)


def session(store: SessionStore, when: datetime, query: str | None) -> str:
    """A session file as the Recorder makes it; ``query`` None: killed before its first
    block was written (the header only)."""
    live = store.new_session(agent_key="assistant", agent="Assistant",
                             agent_path="config:assistant", model="offline",
                             provider="offline", now=when)
    if query is not None:
        live.append_turn(Turn("query", 1, when, query, answer_blocks("noted")), "Assistant")
    live.close()
    return live.session_id


def test_a_header_only_session_is_listed_last(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    older = session(store, NOW - timedelta(hours=2), "the database is postgres")
    real = session(store, NOW - timedelta(hours=1), "the queue is rabbitmq")
    empty = session(store, NOW, None)  # the newest
    listing = store.list_sessions()
    assert [s.session_id for s in listing.sessions] == [real, older, empty]
    assert [s.empty for s in listing.sessions] == [False, False, True]
    assert store.index.resolve("1").session_id == real  # `resume 1` is the listing's first
    assert store.index.resolve("3").session_id == empty
    [hit] = store.index.search("rabbitmq")
    assert hit.number == 1
    # the listing made without the index (numbered) orders them alike
    assert [s.session_id for s in numbered(list(listing.sessions), []).sessions] == [
        real, older, empty]


def test_continue_never_picks_a_header_only_session(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    store = SessionStore(root)
    real = session(store, datetime.now(timezone.utc) - timedelta(minutes=5),
                   "my editor is helix")
    empty = session(store, datetime.now(timezone.utc), None)  # written last, started last
    cfg = write_config(tmp_path / "rollchat.yml", "ui:\n  offline_word_delay: 0\n")
    result = run_piped(tmp_path, "which editor did I mention?\n", "--config", str(cfg),
                       "--provider", "offline", "--sessions-dir", str(root), "-c",
                       env=clean_env(tmp_path / "home"))
    assert result.returncode == 0, result.stderr
    assert "no queries to resume from" not in result.stdout + result.stderr
    assert f"{real} has no summary; summarizing its transcript now" in result.stdout
    assert "helix" in result.stdout.split("which editor did I mention?")[-1]
    assert empty not in result.stdout


def test_continue_with_only_header_only_sessions_says_so(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    session(SessionStore(root), NOW, None)
    cfg = write_config(tmp_path / "rollchat.yml", "ui:\n  offline_word_delay: 0\n")
    result = run_piped(tmp_path, "hello\n", "--config", str(cfg), "--provider", "offline",
                       "--sessions-dir", str(root), "-c", env=clean_env(tmp_path / "home"))
    assert result.returncode != 0
    assert f"no session in {root} has a query to continue from (1 without one)" in result.stderr
