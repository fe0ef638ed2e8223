"""Concurrency: 8 processes creating, appending to and compacting sessions in one directory at
once (store snippets, then real piped rollchat sessions), and two resumes of one parent (both
children linked from it). A session open in another process: tests/storage/test_locks.py.
Each process is forked by the tests' fork server (tests/forkserver.py: a process of its own,
started without paying rollchat's imports again; a new interpreter when the server is off),
all of them started before any is waited for."""

from __future__ import annotations

import subprocess
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rollchat.domain import Summary, Transcript, Turn, Usage, answer_blocks
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import parse
from tests.e2e import clean_env, start_piped, write_config

PROCS = 8

# One writer: waits for the start signal, then 3 sessions x 5 turns, each finalized and
# followed by a child linked to it (what compact does); lists the directory after every turn.
WRITER = r"""
import sys, time
from datetime import datetime, timezone
from pathlib import Path
from rollchat.storage.store import SessionStore
from rollchat.domain import Summary, Transcript, Turn, Usage, answer_blocks

root, who, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
deadline = time.monotonic() + 60  # the test died before its start signal: do not linger
while not go.exists():
    if time.monotonic() > deadline:
        sys.exit("no start signal within 60 s")
    time.sleep(0.002)
store = SessionStore(root)
now = datetime(2026, 11, 22, 14, 30, tzinfo=timezone.utc)  # same second: same id prefix
parent = None
for s in range(3):
    live = store.new_session(
        agent_key="assistant", agent="Assistant", agent_path="config:assistant",
        model="offline", provider="offline", now=now,
        resumed_from=parent.session_id if parent else None,
        previous_session=parent.file_name if parent else None)
    for q in range(1, 6):
        turn = Turn("query", q, now, f"{who} s{s} q{q}", answer_blocks(f"{who} answer " * 400),
                    usage=Usage(3, 4))
        live.append_turn(turn, "Assistant")
        for name, why in store.list_sessions().problems:
            print("PROBLEM", name, why, flush=True)
    summary = Summary("Initial session.", (f"{who} s{s}",), (), ())
    store.finalize(live.session_id, summary, total_queries=5, total_tokens=35)
    parent = live
    print("SESSION", live.session_id, flush=True)
"""


def _parsed(root: Path) -> dict[str, Transcript]:
    """Every session file, parsed (a parse error fails the test)."""
    return {p.name: parse(p.read_text(encoding="utf-8")) for p in sorted(root.glob("*.md"))}


def _run_together(cwd: Path, env: dict[str, str], args: list[str],
                  inputs: list[str]) -> list[subprocess.CompletedProcess[str]]:
    """``python -m rollchat ARGS`` once per input, every one started and given its input
    (each script ends with ``exit``) before any is waited for: their turns, compactions and
    resumes run at the same time."""
    procs = [start_piped(cwd, *args, env=env) for _ in inputs]
    for text, proc in zip(inputs, procs, strict=True):
        assert proc.stdin is not None
        proc.stdin.write(text)
        proc.stdin.flush()
    done = []
    for proc in procs:
        out, err = proc.communicate("", timeout=120)
        done.append(subprocess.CompletedProcess(proc.args, proc.wait(), out, err))
    return done


def test_eight_store_writers_in_one_directory(tmp_path: Path) -> None:
    root, go = tmp_path / "sessions", tmp_path / "go"
    SessionStore(root).ensure()
    (tmp_path / "concurrent_writer.py").write_text(WRITER, encoding="utf-8")
    procs = [start_piped(tmp_path, str(root), f"p{i}", str(go), stdin=False,
                         module="concurrent_writer") for i in range(PROCS)]
    go.touch()
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.wait() for p in procs] == [0] * PROCS, [err for _, err in results]
    assert "PROBLEM" not in "".join(out for out, _ in results)
    ids = [line.split()[1] for out, _ in results for line in out.splitlines()]
    assert len(ids) == len(set(ids)) == PROCS * 3  # unique ids, though all in one second
    files = _parsed(root)
    assert sorted(files) == sorted(f"{i}.md" for i in ids)
    for i, (out, _) in enumerate(results):
        chain = [line.split()[1] for line in out.splitlines()]
        for s, sid in enumerate(chain):
            t = files[f"{sid}.md"]
            assert [x.user for x in t.turns] == [f"p{i} s{s} q{q}" for q in range(1, 6)]
            assert all(x.assistant == f"p{i} answer " * 400 for x in t.turns)
            assert t.summary is not None and t.header.total_queries == 5
            parent = chain[s - 1] if s else None
            assert t.header.resumed_from == parent
    listing = SessionStore(root).list_sessions()
    assert listing.problems == []
    assert len(listing.sessions) == PROCS * 3
    assert all(info.queries == 5 and info.has_summary for info in listing.sessions)


def _rollchat(sessions: Path, config: Path, *args: str) -> list[str]:
    return ["--config", str(config), "--sessions-dir", str(sessions), *args]


def _setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    config = write_config(tmp_path / "rollchat.yml", "ui:\n  offline_word_delay: 0\n")
    return tmp_path / "sessions", config, clean_env(tmp_path / "home")


def test_eight_rollchat_sessions_with_compact_at_once(tmp_path: Path) -> None:
    sessions, config, env = _setup(tmp_path)
    scripts = [f"p{i} q1: we decided to use postgres\np{i} q2: what about caching?\ncompact\n"
               f"p{i} q3: carry on with the cache\nexit\n" for i in range(PROCS)]
    done = _run_together(tmp_path, env, _rollchat(sessions, config), scripts)
    assert [r.returncode for r in done] == [0] * PROCS, [r.stderr for r in done]
    files = _parsed(sessions)
    assert len(files) == 2 * PROCS  # a parent and its child per process
    owner: dict[str, str] = {}
    for name, t in files.items():
        users = [x.user for x in t.turns if x.kind == "query"]
        assert users, name
        who = users[0].split(" ", 1)[0]
        assert all(u.startswith(f"{who} ") for u in users)  # nothing from another process
        owner[name] = who
        assert t.summary is not None
    counts = Counter(u for t in files.values() for u in (x.user for x in t.turns))
    for i in range(PROCS):
        for q, text in enumerate(["we decided to use postgres", "what about caching?",
                                  "carry on with the cache"], 1):
            assert counts[f"p{i} q{q}: {text}"] == 1
    for name, t in files.items():
        if t.header.previous_session is not None:  # the child: linked to its own parent
            parent = files[t.header.previous_session]
            assert owner[t.header.previous_session] == owner[name]
            assert [x.user.split(":")[0] for x in parent.turns] == [f"{owner[name]} q1",
                                                                    f"{owner[name]} q2"]
    listing = SessionStore(sessions).list_sessions()
    assert listing.problems == [] and len(listing.sessions) == 2 * PROCS


def _parent(sessions: Path, summarized: bool) -> str:
    store = SessionStore(sessions)
    t0 = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)
    live = store.new_session(agent_key="assistant", agent="Assistant",
                             agent_path="config:assistant", model="offline",
                             provider="offline", now=t0)
    for q, text in enumerate(["we decided to use postgres", "what about the cache?"], 1):
        live.append_turn(Turn("query", q, t0 + timedelta(minutes=q), text,
                              answer_blocks(f"noted: {text}"),
                              usage=Usage(10, 5)), "Assistant")
    if summarized:
        store.finalize(live.session_id, Summary("Initial session.", ("postgres",),
                                                ("use postgres",), ()),
                       total_queries=2, total_tokens=30)
    return live.session_id


@pytest.mark.parametrize("summarized", [True, False])
def test_two_processes_resume_the_same_parent(tmp_path: Path, summarized: bool) -> None:
    sessions, config, env = _setup(tmp_path)
    parent = _parent(sessions, summarized)
    scripts = [f"child {i}: carry on with postgres\nexit\n" for i in range(2)]
    done = _run_together(tmp_path, env, _rollchat(sessions, config, "--resume", parent), scripts)
    assert [r.returncode for r in done] == [0, 0], [r.stderr for r in done]
    files = _parsed(sessions)
    assert len(files) == 3
    parent_t = files.pop(f"{parent}.md")
    assert [x.user for x in parent_t.turns] == ["we decided to use postgres",
                                                "what about the cache?"]
    assert parent_t.summary is not None  # (written by one of the two when it had none)
    children = sorted(files.values(), key=lambda t: t.turns[-1].user)
    # Each child is linked from the session it continues: both from the parent when both
    # looked before either had linked (the two header rewrites serialized by its lock), or the
    # second from the first child when it found the parent already continued (a resume takes
    # the chain's newest session when nobody can be asked: session/resume.py); that child is
    # open in the first process, so the second forks it, and a fork's source is not linked.
    headers = {parent: parent_t.header, **{c.header.session_id: c.header for c in children}}
    for child in children:
        source = child.header.resumed_from
        assert source in headers and child.header.previous_session == f"{source}.md"
        linked = child.header.session_id in headers[source].continued_in
        assert linked != child.header.forked, (source, child.header)
    assert parent in {c.header.resumed_from for c in children}
    assert sum(len(h.continued_in) for h in headers.values()) == sum(  # none lost or doubled
        not c.header.forked for c in children)
    for i, child in enumerate(children):
        assert [x.kind for x in child.turns] == ["restored", "query"]
        assert child.turns[-1].user == f"child {i}: carry on with postgres"
        assert child.summary is not None
    listing = SessionStore(sessions).list_sessions()
    assert listing.problems == [] and len(listing.sessions) == 3
