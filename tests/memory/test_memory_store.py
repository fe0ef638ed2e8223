"""The memory store: facts and episodes in JSON Lines files, ids, forgetting for good, damaged
lines, ranking, and two processes writing at once."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rollchat.memory.records import check_facts_file
from rollchat.memory.store import MemoryStore, MemoryStoreError


def store(tmp_path: Path, **kw: object) -> MemoryStore:
    return MemoryStore(tmp_path / "sessions", "Assistant", **kw)  # type: ignore[arg-type]


def test_facts_are_kept_in_the_sessions_dir_one_line_each(tmp_path: Path) -> None:
    s = store(tmp_path)
    fact = s.add("prefers tabs over spaces", "preference", confidence=0.9,
                 source_session="assistant_20260101_120000_abcd", source_turn=3)
    assert fact is not None and fact.id == 1 and fact.scope == "project"
    path = tmp_path / "sessions" / "memory" / "assistant.facts.jsonl"
    assert s.facts_path == path
    record = json.loads(path.read_text())
    assert record["text"] == "prefers tabs over spaces" and record["category"] == "preference"
    assert record["source_session"] == "assistant_20260101_120000_abcd"
    assert record["source_turn"] == 3 and record["confidence"] == 0.9
    assert path.stat().st_mode & 0o777 == 0o600
    again = MemoryStore(tmp_path / "sessions", "Assistant").facts()
    assert again == [fact]
    assert again[0].source == "session assistant_20260101_120000_abcd turn 3"


def test_duplicates_are_not_added_and_ids_grow(tmp_path: Path) -> None:
    s = store(tmp_path)
    assert s.add("Prefers tabs over spaces.", "preference") is not None
    assert s.add("prefers   TABS over spaces", "preference") is None
    second = s.add("we deploy on Fridays", "decision")
    assert second is not None and second.id == 2
    assert [f.text for f in s.facts()] == ["Prefers tabs over spaces.", "we deploy on Fridays"]


@pytest.mark.parametrize(("args", "message"), [
    (("", "preference"), "text"),
    (("x", "hobby"), "\"category\" must be one of preference"),
    (("x", "project", 1.5), "confidence"),
])
def test_bad_values_are_refused_clearly(tmp_path: Path, args: tuple, message: str) -> None:
    s = store(tmp_path)
    text, category, *rest = args
    with pytest.raises(MemoryStoreError, match=message):
        s.add(text, category, confidence=rest[0] if rest else 1.0)
    assert s.facts() == []


def test_a_forgotten_fact_never_comes_back(tmp_path: Path) -> None:
    s = store(tmp_path)
    fact = s.add("my editor is vim", "preference")
    assert fact is not None
    assert s.forget(fact.id).text == "my editor is vim"
    assert s.facts() == []
    assert s.add("My editor is Vim", "preference") is None  # extraction again: refused
    assert store(tmp_path).facts() == []
    assert [f.id for f in s.forgotten()] == [fact.id]
    with pytest.raises(MemoryStoreError, match="already forgotten"):
        s.forget(fact.id)
    with pytest.raises(MemoryStoreError, match="there is no fact 99"):
        s.forget(99)
    # a new fact never takes the forgotten one's id
    new = s.add("uses fish shell", "background")
    assert new is not None and new.id == fact.id + 1


def test_damaged_lines_are_reported_skipped_and_kept(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.add("first fact", "project")
    with s.facts_path.open("ab") as f:
        f.write(b'{"id": 7, "text": "half a line\n\xff\xfe not utf-8\n[1, 2]\n')
    assert [f.text for f in s.facts()] == ["first fact"]
    problems = s.take_problems()
    assert len(problems) == 3
    assert f"{s.facts_path} line 2: not JSON" in problems[0]
    assert "line 3: not UTF-8; skipped" in problems[1]
    assert "line 4: not a JSON object; skipped" in problems[2]
    assert s.take_problems() == []  # told once
    second = s.add("second fact", "project")
    assert second is not None and second.id == 8  # id 7 may be the damaged line's
    s.forget(1)
    s.mark_used([8])
    raw = s.facts_path.read_bytes()
    assert b'"text": "half a line\n\xff\xfe not utf-8\n[1, 2]\n' in raw  # never rewritten away
    assert [f.text for f in s.facts()] == ["second fact"]


def test_user_scope_keeps_personal_facts_in_the_user_store(tmp_path: Path) -> None:
    user_dir = tmp_path / "user"
    s = store(tmp_path, user_dir=user_dir, scope="user")
    pref = s.add("prefers short answers", "preference")
    proj = s.add("the API runs on port 8443", "project")
    assert pref is not None and pref.scope == "user" and pref.id == 1
    assert proj is not None and proj.scope == "project" and proj.id == 2  # one counter
    assert (user_dir / "user.facts.jsonl").exists()
    # another project (another sessions dir) sees the person's facts, not the project's
    other = MemoryStore(tmp_path / "elsewhere", "Assistant", user_dir=user_dir)
    assert [f.text for f in other.facts()] == ["prefers short answers"]
    assert other.add("Prefers short answers", "preference") is None
    other.forget(pref.id)
    assert [f.text for f in s.facts()] == ["the API runs on port 8443"]
    with pytest.raises(MemoryStoreError, match="scope must be project or user"):
        store(tmp_path, scope="team")


def test_relevant_ranks_with_bm25_and_finds_nothing_for_nothing(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.add("prefers tabs over spaces in Python code", "preference")
    s.add("the staging database is postgres 15", "project")
    s.add("deploys happen on Fridays", "decision")
    assert s.relevant("which database does staging use?")[0].text == \
        "the staging database is postgres 15"
    assert [f.text for f in s.relevant("should I indent with tabs", k=1)] == \
        ["prefers tabs over spaces in Python code"]
    assert s.relevant("what is the weather") == []
    assert s.relevant("the and of") == []
    assert s.relevant('"quotes" AND (NEAR broken*') == []  # FTS syntax is only words


def test_mark_used_and_stale(tmp_path: Path) -> None:
    s = store(tmp_path)
    old = s.add("old fact", "project")
    new = s.add("fresh fact", "project")
    assert old is not None and new is not None
    later = datetime.now(timezone.utc) + timedelta(days=40)
    s.mark_used([new.id])
    assert s.get(new.id) is not None and s.get(new.id).last_used is not None  # type: ignore
    assert [f.text for f in s.stale(30, at=later)] == ["old fact", "fresh fact"]
    assert s.stale(30) == []


def test_episodes_round_trip(tmp_path: Path) -> None:
    s = store(tmp_path)
    assert s.episodes() == []
    e = s.add_episode("assistant_20260101_120000_abcd", "**Topics Discussed:**\n- rate limits",
                      title="Rate limiter", span="2026-01-01 12:00 – 12:40")
    assert s.episodes() == [e]
    with s.episodes_path.open("a") as f:
        f.write("garbage\n")
    assert s.episodes() == [e] and "line 2: not JSON" in s.problems[0]
    facts, episodes = s.search("rate limits")
    assert facts == [] and episodes == [e]


def test_check_facts_file_names_every_problem() -> None:
    good = ('{"id": 1, "text": "a", "category": "project", "confidence": 1, '
            '"created": "2026-01-01T00:00:00+00:00"}')
    text = "\n".join([good, good, "{", '{"id": 2, "text": "b", "category": "x", '
                      '"created": "2026-01-01T00:00:00"}', ""])
    assert check_facts_file(text, "project") == [
        "line 2: id 1 is already used on line 1",
        "line 3: not JSON (Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1))",
        "line 4: \"category\" must be one of preference, background, project, decision, "
        "contact, pattern (not 'x')",
    ]


WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from rollchat.memory.store import MemoryStore
    s = MemoryStore(Path(sys.argv[1]), "Assistant")
    name = sys.argv[2]
    for n in range(40):
        s.add(f"fact {n} from writer {name}", "project")
        s.mark_used([1, 2, 3])
        if n % 10 == 0:
            s.add_episode(f"{name}_{n}", "summary")
""")


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    store(tmp_path).add("shared first fact", "project")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(sessions), name])
             for name in ("a", "b", "c")]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    s = store(tmp_path)
    texts = {f.text for f in s.facts()}
    assert texts == {"shared first fact"} | {f"fact {n} from writer {w}"
                                            for n in range(40) for w in "abc"}
    assert sorted(f.id for f in s.facts()) == list(range(1, 122))
    assert len(s.episodes()) == 12 and s.problems == []
