"""Crash safety: SIGKILLs landed exactly inside the store's writes (a helper process blocks at
one step; the test kills it there), and a smoke run of bench/crash_harness.py. The harness's
real run (hundreds of kills at random moments, which phases they hit) is a measurement and
lives in bench/: ``python bench/crash_harness.py --kills 200 --seed 1`` (bench/run_all)."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType

import pytest

from rollchat.domain import Summary, Turn, Usage, answer_blocks
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import parse

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 11, 22, 14, 30, tzinfo=timezone.utc)

# Runs one store operation in a child process with one step replaced by "say BLOCKED, sleep".
HELPER = r"""
import os, sys, time
from datetime import datetime, timezone
from rollchat.storage import session_file as sf
from rollchat.storage import store as st
from rollchat.domain import SessionHeader, Summary, Turn, Usage, answer_blocks

def block(*args, **kwargs):
    print("BLOCKED", flush=True)
    time.sleep(120)

def half_then_block(fd, data):
    os.write(fd, data[: len(data) // 2])
    block()

root, mode, sid = sys.argv[1], sys.argv[2], sys.argv[3]
store = st.SessionStore(st.Path(root))
store.ensure()
summary = Summary("Initial session.", ("the queue",), ("use postgres",), ())
now = datetime(2026, 11, 22, 15, 0, tzinfo=timezone.utc)
turn = Turn("query", 3, now, "third question", answer_blocks("third answer"), usage=Usage(5, 7))
if mode == "replace":
    os.replace = block
    store.finalize(sid, summary, total_queries=2, total_tokens=30)
elif mode == "fsync":
    os.fsync = block
    store.finalize(sid, summary, total_queries=2, total_tokens=30)
elif mode == "append":
    sf.write_all = half_then_block
    header = SessionHeader(sid, now, "Assistant", "config:assistant", "offline", "offline")
    st.FileSession(store.path_for(sid), header).append_turn(turn, "Assistant")
elif mode in ("create", "link"):
    if mode == "create":
        st.write_all = block
    else:
        os.link = block
    store.new_session(agent_key="assistant", agent="Assistant", agent_path="config:assistant",
                      model="offline", provider="offline", now=now)
"""


def _harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("crash_harness",
                                                  ROOT / "bench" / "crash_harness.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["crash_harness"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _turn(n: int, text: str) -> Turn:
    return Turn("query", n, T0 + timedelta(minutes=n), text, answer_blocks(f"answer to {text}"),
                elapsed=1.5, usage=Usage(10, 5))


def _session(root: Path) -> str:
    store = SessionStore(root)
    live = store.new_session(agent_key="assistant", agent="Assistant",
                             agent_path="config:assistant", model="offline",
                             provider="offline", now=T0)
    live.append_turn(_turn(1, "first question"), "Assistant")
    live.append_turn(_turn(2, "second question"), "Assistant")
    return live.session_id


def _kill_when_blocked(root: Path, mode: str, sid: str) -> None:
    """Start the helper, wait until it is blocked inside the store, SIGKILL it."""
    proc = subprocess.Popen([sys.executable, "-c", HELPER, str(root), mode, sid],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line != "BLOCKED\n":
        proc.kill()
        raise AssertionError(f"helper did not block: {line!r} {proc.communicate()[1]}")
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def _temp_files(root: Path) -> list[str]:
    return [n for n in os.listdir(root) if ".md.tmp-" in n]


def _assert_clean_listing(root: Path, sessions: int) -> None:
    listing = SessionStore(root).list_sessions()
    assert listing.problems == []
    assert len(listing.sessions) == sessions


def test_the_crash_harness_runs_and_finds_no_violations() -> None:
    """A few kills, so that the harness itself keeps working and checking (the exact kills
    are the tests above; the harness's many random ones are bench/crash_harness.py's run)."""
    harness = _harness()
    stats = harness.Harness(kills=3, seed=7, workers=2).run()
    assert stats.kills >= 3
    assert stats.violations == []


@pytest.mark.parametrize("mode", ["replace", "fsync"])
def test_kill_inside_finalize_keeps_the_old_file(tmp_path: Path, mode: str) -> None:
    sid = _session(tmp_path)
    path = tmp_path / f"{sid}.md"
    before = path.read_bytes()
    _kill_when_blocked(tmp_path, mode, sid)
    assert path.read_bytes() == before  # the rewrite never touched the file itself
    assert len(_temp_files(tmp_path)) == 1  # the finished (or unsynced) temporary copy
    _assert_clean_listing(tmp_path, 1)
    SessionStore(tmp_path).ensure()  # the next start
    assert _temp_files(tmp_path) == []
    assert [t.user for t in parse(path.read_text()).turns] == ["first question",
                                                               "second question"]


def test_kill_mid_append_loses_only_the_turn_in_flight(tmp_path: Path) -> None:
    sid = _session(tmp_path)
    path = tmp_path / f"{sid}.md"
    _kill_when_blocked(tmp_path, "append", sid)
    assert "third question" in path.read_text()  # half a block is on disk
    assert [t.user for t in parse(path.read_text()).turns] == ["first question",
                                                               "second question"]
    _assert_clean_listing(tmp_path, 1)
    store = SessionStore(tmp_path)  # resuming it finalizes it: the torn block goes
    store.finalize(sid, Summary("Initial session.", ("a",), (), ()), total_queries=2,
                   total_tokens=30)
    transcript = parse(path.read_text())
    assert [t.user for t in transcript.turns] == ["first question", "second question"]
    assert transcript.summary is not None
    assert "third question" not in path.read_text()


@pytest.mark.parametrize("mode", ["create", "link"])
def test_kill_while_creating_a_session_leaves_no_bad_file(tmp_path: Path, mode: str) -> None:
    SessionStore(tmp_path).ensure()
    _kill_when_blocked(tmp_path, mode, "unused")
    SessionStore(tmp_path).ensure()
    _assert_clean_listing(tmp_path, 0)
    assert [n for n in os.listdir(tmp_path) if not n.startswith(".")] == []


def test_create_without_hard_links_falls_back(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(*args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    sid = _session(tmp_path)
    assert [t.user for t in parse((tmp_path / f"{sid}.md").read_text()).turns] == [
        "first question", "second question"]
    assert _temp_files(tmp_path) == []
