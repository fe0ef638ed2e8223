"""A kill while a session file is rewritten (the turn in progress replaced by the next or by
the finished turn, the header's totals refreshed) never tears it: a child process saving turns
with several large tool results is SIGKILLed at a random offset of a random one of its large
writes, and what is left parses and keeps every completed tool call and every turn before it.
Once through the session API (many kills, fast), once through a real ``rollchat`` (piped,
offline model, an agent whose tool returns a large result), then shown, exported, resumed."""

# The child is stopped inside one write, after a random share of its bytes, then SIGKILLed:
# what one large write(2) leaves when a SIGKILL stops it part-way (a kernel stops a write between
# pages; stopping at any byte is a harder test). Each write of 64 KB or more to the sessions
# directory counts, so a temporary file's write and the session file's own both take kills.

from __future__ import annotations

import json
import os
import random
import select
import signal
import stat
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rollchat.domain import ToolCall, ToolExchange, Turn, TurnStatus, answer_blocks
from rollchat.storage.store import SessionStore
from rollchat.storage.transcript import parse
from tests import forkserver
from tests.e2e import _STARTING_ENV, _clean_env, clean_env, run_piped

AGENT = '''
name = "Worker"
approval = "auto"


def big(n: int) -> str:
    """A large result."""
    return f"R{n}:" + "abcdefgh" * (SIZE // 8) + f":end{n}"
'''
SIZE = 150_000  # one line: the offline model quotes it whole in its answer
CALLS = 2

# The child: rollchat, with a log (events.log) of each large write to the sessions directory
# as it begins, of each turn in progress ("pending N") and each finished turn ("turn N") the
# store has saved (its call returned: durable from then on); and stopped, to be SIGKILLed, at
# one large write (STOP="<write number>:<share of its bytes written>").
WATCH = r"""
import os, sys, time
from rollchat.storage import session_file
_write, _pwrite = os.write, os.pwrite
BIG = 64 * 1024
log = os.open("events.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
stop_at, share = int(os.environ["STOP"].split(":")[0]), float(os.environ["STOP"].split(":")[1])
writes = 0

def event(text):
    _write(log, (text + "\n").encode())

def watched(fd, data):
    if len(data) < BIG:
        return False
    try:
        return "/sessions/" in os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False

def stop():
    event("stopped")
    time.sleep(60)

def written(fd, data, put):
    global writes
    if not watched(fd, data):
        return put(data)
    writes += 1
    event("write")
    if writes != stop_at:
        return put(data)
    cut = int(len(data) * share)
    put(memoryview(data)[:cut])
    stop()

os.write = lambda fd, data: written(fd, data, lambda d: _write(fd, d))
os.pwrite = lambda fd, data, at: written(fd, data, lambda d: _pwrite(fd, d, at))

def logged(method, what):
    def call(self, turn, agent_name):
        method(self, turn, agent_name)
        event(f"{what} {turn.tools[-1].call.arguments['n'] if turn.tools else 0}")
    return call

FS = session_file.FileSession
FS.write_pending = logged(FS.write_pending, "pending")
FS.append_turn = logged(FS.append_turn, "turn")
"""
CHAT = WATCH + r"""
import runpy
sys.argv = ["rollchat", *sys.argv[1:]]
runpy.run_module("rollchat", run_name="__main__")
"""
# Through the session API: TURNS turns of CALLS_PER_TURN calls each, results of random sizes,
# each call's turn in progress saved, then the finished turn and the header's totals.
API = WATCH + r"""
import random
TURNS, CALLS_PER_TURN = 3, 3
from datetime import datetime, timezone
from pathlib import Path
from rollchat.domain import ToolCall, ToolExchange, Turn, Usage, answer_blocks
from rollchat.storage.store import SessionStore

rng = random.Random(os.environ["SEED"])
store = SessionStore(Path("sessions"))
live = store.new_session(agent_key="worker", agent="Worker", agent_path="worker.py",
                         model="offline", provider="offline",
                         now=datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc))
n = 0
for number in range(1, TURNS + 1):
    started = datetime(2026, 11, 25, 12, number, tzinfo=timezone.utc)
    tools = []
    for _ in range(CALLS_PER_TURN):
        n += 1
        size = rng.randint(BIG, 4 * BIG)
        result = f"R{n}:" + "abcdefgh" * (size // 8) + f":end{n}"
        tools.append(ToolExchange(ToolCall(f"c{n}", "big", {"n": n}), result))
        live.write_pending(Turn("query", number, started, f"question {number}",
                                answer_blocks("Looking.", tuple(tools)), status="interrupted"),
                           "Worker")
    live.append_turn(Turn("query", number, started, f"question {number}",
                          answer_blocks("Looking. Done.", tuple(tools)),
                          usage=Usage(10 * number, 5)), "Worker")
    live.set_totals(number, 15 * number, 10 * number)
event("finished")
time.sleep(60)
"""
API_WRITES = 3 * (3 + 1)  # its large writes: each turn in progress, each finished turn
API_KILLS = 32


def _whole(n: int, result: str) -> bool:
    body = result[len(f"R{n}:"):-len(f":end{n}")]
    return (result.startswith(f"R{n}:") and result.endswith(f":end{n}")
            and body == "abcdefgh" * (len(body) // 8))


def _events(cwd: Path) -> list[str]:
    try:
        return (cwd / "events.log").read_text().splitlines()
    except OSError:
        return []


def _kill_inside_a_write(cwd: Path, env: dict[str, str], script: str, stop: str,
                        stdin: bytes = b"") -> list[str]:
    """Run ``script`` in a child (``python -m``, forked by the tests' fork server when it can:
    a process of its own, without paying the imports again) until it stops inside the large
    write ``stop`` names, SIGKILL it there; the events logged by then."""
    (cwd / "killed.py").write_text(script)
    env = {**env, "STOP": stop}
    stdin_r, stdin_w = os.pipe()
    null = [os.open(os.devnull, os.O_WRONLY) for _ in range(2)]  # (the chat prints results)
    started = forkserver.launch(("worker.py",), cwd, env,
                                lambda home: _clean_env(_STARTING_ENV, home),
                                (stdin_r, *null), umask=forkserver._umask(), module="killed")
    if started is None:
        os.close(stdin_w)
        proc = subprocess.Popen([sys.executable, "-m", "killed", "worker.py"], cwd=cwd,
                                env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        assert proc.stdin is not None
        stdin_w = proc.stdin.fileno()
    try:
        os.write(stdin_w, stdin)  # left open: a chat waits for more, nothing ends it but the kill
        deadline = time.monotonic() + 60
        while not {"stopped", "finished"} & set(_events(cwd)):
            running = (proc.poll() is None if started is None
                       else not select.select([started[0]], [], [], 0)[0])
            assert running and time.monotonic() < deadline, _events(cwd)
            time.sleep(0.005)
        if started is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        else:
            os.kill(started[1], signal.SIGKILL)  # (alive, stopped: not reaped, its pid its own)
            assert forkserver.ended(started[0]) == -signal.SIGKILL
    finally:
        if started is not None:
            os.close(stdin_w)
            started[0].close()  # (the server kills a child whose caller is gone)
    return _events(cwd)


def _check(session: Path, events: list[str]) -> None:
    """The file parses, and keeps every call whose turn in progress was saved and every turn
    that was saved, whole, in order."""
    transcript = parse(session.read_text())  # what show, export and --resume read
    stored = SessionStore(session.parent).load_transcript(session.stem)
    assert stored.turns == transcript.turns
    kept = [int(str(ex.call.arguments["n"])) for t in transcript.turns for ex in t.tools]
    saved = [int(e.split()[1]) for e in events if e.startswith(("pending ", "turn "))]
    finished = [int(e.split()[1]) for e in events if e.startswith("turn ")]
    assert kept[:max(saved, default=0)] == list(range(1, max(saved, default=0) + 1)), (
        events, kept)
    assert [t.status for t in transcript.turns][:len(finished)] == ["ok"] * len(finished)
    for t in transcript.turns:
        for ex in t.tools:
            assert _whole(int(str(ex.call.arguments["n"])), ex.result)


def _cli(cwd: Path, env: dict[str, str], *args: str, stdin: str = "") -> str:
    done = run_piped(cwd, stdin, *args, env=env, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _session(cwd: Path, events: list[str]) -> Path | None:
    files = list((cwd / "sessions").glob("*.md"))
    assert len(files) <= 1
    if not files:  # killed before the first save
        assert not any(e.startswith(("pending", "turn")) for e in events)
        return None
    _check(files[0], events)
    return files[0]


def test_sigkill_inside_any_large_write_of_the_session_api_never_tears_it(
        tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("ROLLCHAT_KILL_SEED", "24")))
    env = clean_env(tmp_path / "home")
    for kill in range(API_KILLS):
        cwd = tmp_path / f"k{kill}"
        cwd.mkdir()
        stop = f"{rng.randint(1, API_WRITES)}:{rng.random():.4f}"
        events = _kill_inside_a_write(cwd, {**env, "SEED": str(kill)}, API, stop)
        _session(cwd, events)


@pytest.mark.parametrize("stop", ["2:0.95", "4:0.97"])
def test_sigkill_inside_a_chat_s_large_write_then_show_export_resume(
        tmp_path: Path, stop: str) -> None:
    """Stopped inside the first (2) or the second (4) finished turn's write, past its tool
    result: where a finished turn written over its turn in progress tore it."""
    (tmp_path / "worker.py").write_text(AGENT.replace("SIZE", str(SIZE)))
    env = clean_env(tmp_path / "home")
    lines = "".join(f'use big {{"n": {n}}}\n' for n in range(1, CALLS + 1)).encode()
    events = _kill_inside_a_write(tmp_path, env, CHAT, stop, lines)
    session = _session(tmp_path, events)
    assert session is not None
    turns = parse(session.read_text()).turns
    assert turns and turns[0].tools  # the first call is kept, whatever the kill tore
    shown = _cli(tmp_path, env, "show", session.stem, "--sessions-dir", "sessions")
    assert all(f":end{t.tools[0].call.arguments['n']}" in shown for t in turns if t.tools)
    exported = json.loads(_cli(tmp_path, env, "export", session.stem, "--format", "json",
                               "--sessions-dir", "sessions"))
    assert exported
    _cli(tmp_path, env, "worker.py", "--resume", "1", "--yes", stdin="exit\n")
    _check(session, events)  # resuming finalized it: a rewrite of its own


# ---------------------------------------------------------------- what the rewrites keep

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


def _big_turn(calls: int, status: TurnStatus = "interrupted") -> Turn:
    tools = tuple(ToolExchange(ToolCall(f"c{n}", "big", {"n": n}), f"R{n}:" + "x" * 100_000)
                  for n in range(1, calls + 1))
    return Turn("query", 1, T0, "go", answer_blocks("Looking.", tools), status=status)


def test_replacing_the_turn_in_progress_keeps_the_lock_and_the_index(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    live = store.new_session(agent_key="worker", agent="Worker", agent_path="worker.py",
                             model="offline", provider="offline", now=T0)
    path = tmp_path / live.file_name
    live.write_pending(_big_turn(1), "Worker")
    inode = path.stat().st_ino
    live.write_pending(_big_turn(2), "Worker")
    assert path.stat().st_ino != inode  # a rename: a new file
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    held = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; "
         "from rollchat.storage.store import SessionStore; "
         "print(SessionStore(Path(sys.argv[1])).open_elsewhere(sys.argv[2]))",
         str(tmp_path), live.session_id], capture_output=True, text=True, check=True)
    assert held.stdout.strip() == "True"  # the lock is its own file: still held
    [info] = store.list_sessions().sessions  # the index sees the new file (size, mtime)
    assert info.first_query_preview == "go"
    live.append_turn(_big_turn(3, "ok"), "Worker")
    [turn] = store.load_transcript(live.session_id).turns
    assert turn.status == "ok" and [ex.call.id for ex in turn.tools] == ["c1", "c2", "c3"]
    assert [n for n in os.listdir(tmp_path) if ".tmp-" in n] == []
    assert store.list_sessions().sessions[0].queries == 0  # the totals: set_totals's own
    live.set_totals(1, 15, 10)
    assert store.list_sessions().sessions[0].queries == 1
    live.close()


def test_totals_are_written_line_by_line_each_inside_one_sector(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line across a sector boundary keeps its old value: never half of each."""
    store = SessionStore(tmp_path)
    kept_old = 0
    writes: list[tuple[int, int]] = []
    real = os.pwrite

    def recorded(fd: int, data: bytes, at: int) -> int:
        writes.append((at, len(data)))
        return real(fd, data, at)

    for width in range(0, 512, 7):  # agent paths that move the totals across byte 512
        live = store.new_session(agent_key="w", agent="Worker", agent_path="p" * (60 + width),
                                 model="offline", provider="offline",
                                 now=T0 + timedelta(seconds=width))
        writes.clear()
        monkeypatch.setattr(os, "pwrite", recorded)
        live.set_totals(3, 1_234, 567)
        monkeypatch.undo()
        assert all(at // 512 == (at + n - 1) // 512 for at, n in writes)
        header = parse((tmp_path / live.file_name).read_text()).header
        totals = (header.total_queries, header.total_tokens, header.context_tokens)
        assert all(new in (0, value) for new, value in zip(totals, (3, 1_234, 567), strict=True))
        kept_old += 0 in totals
        live.close()
    assert 0 < kept_old < 40  # some lines crossed a boundary, most did not
