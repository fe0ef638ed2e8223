"""Two rollchat processes, one session: the process that has a session open is its only writer.
A second process that resumes it (``--resume`` or in-chat ``resume``) is told so in one line and
continues in a fork, or refuses (``--no-fork``, piped input without ``--yes``) with one line; a
killed process leaves no lock behind. Every test here runs real processes side by side (the
chats forked by the tests' fork server: each a process of its own)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pexpect
import pytest

from rollchat.domain import Summary, Transcript
from rollchat.storage.store import SessionBusyError, SessionStore
from rollchat.storage.transcript import parse
from tests.e2e import (
    PROMPT,
    ForkedTerminal,
    clean_env,
    run_piped,
    spawn,
    start_piped,
    write_config,
)
from tests.forkserver import Forked

FORK_LINE = "is open in another rollchat process: continuing in a fork"
BUSY = "is open in another rollchat process; not resumed"


class Setup:
    def __init__(self, tmp_path: Path) -> None:
        self.cwd = tmp_path
        self.sessions = tmp_path / "sessions"
        self.config = write_config(tmp_path / "rollchat.yml", "ui:\n  offline_word_delay: 0\n")
        self.env = clean_env(tmp_path / "home")

    def args(self, *extra: str) -> list[str]:
        return ["--config", str(self.config), "--sessions-dir", str(self.sessions), *extra]

    def piped(self, text: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return run_piped(self.cwd, text, *self.args(*extra), env=self.env, timeout=120)

    def holder(self) -> subprocess.Popen[str] | Forked:
        """A rollchat process reading piped input it has not finished: its session stays open."""
        return start_piped(self.cwd, *self.args(), env=self.env)

    def files(self) -> dict[str, Transcript]:
        return {p.stem: parse(p.read_text(encoding="utf-8"))
                for p in sorted(self.sessions.glob("*.md"))}

    def wait_for_queries(self, count: int) -> str:
        """The id of the session whose file holds ``count`` queries (waits for it)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for sid, t in self.files().items():
                if sum(x.kind == "query" for x in t.turns) == count:
                    return sid
            time.sleep(0.05)
        raise AssertionError(f"no session with {count} queries: {list(self.files())}")

    def listing(self) -> dict[str, dict[str, object]]:
        out = run_piped(self.cwd, "", "sessions", "--json", "--sessions-dir",
                        str(self.sessions), env=self.env)
        assert out.returncode == 0, out.stderr
        return {s["id"]: s for s in json.loads(out.stdout)["sessions"]}


def _say(holder: subprocess.Popen[str] | Forked, line: str) -> None:
    """Send ``line`` and wait for its answer's footer: the turn is saved, and its session file
    is as it stays until the next line (on a loaded machine, reading the file as soon as the
    turn is in it could catch it before the header's totals are written)."""
    assert holder.stdin is not None and holder.stdout is not None
    holder.stdin.write(line + "\n")
    holder.stdin.flush()
    for shown in iter(holder.stdout.readline, ""):
        if shown.startswith("Time: "):
            return
    raise AssertionError(f"the chat ended before answering: {holder.communicate(timeout=30)}")


def _ask(child: pexpect.spawn | ForkedTerminal, text: str) -> None:
    child.sendline(text)
    child.expect(r"Time: .*s \| Tokens")  # the turn's footer: it is saved
    child.expect(PROMPT)


def _lines(text: str, needle: str) -> list[str]:
    return [x for x in text.splitlines() if needle in x]


def test_resuming_a_session_open_in_a_terminal_forks_and_never_writes_it(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    a = spawn(tmp_path, *s.args(), env=s.env, timeout=60, forked=True)
    a.expect(PROMPT)
    _ask(a, "we decided to use postgres")
    [x] = s.files()
    before = (s.sessions / f"{x}.md").read_bytes()

    b = s.piped("what did we decide?\nexit\n", "--resume", "1", "--yes")
    assert b.returncode == 0, b.stderr
    told = _lines(b.stdout + b.stderr, FORK_LINE)
    assert len(told) == 1 and x in told[0]
    assert (s.sessions / f"{x}.md").read_bytes() == before  # never a second writer
    files = s.files()
    [fork] = [sid for sid in files if sid != x]
    child = files[fork]
    assert child.header.forked and child.header.resumed_from == x
    assert child.header.previous_session == f"{x}.md"
    assert "**Forked From:** " + x in (s.sessions / f"{fork}.md").read_text()
    assert [t.kind for t in child.turns] == ["restored", "query"]
    assert child.turns[0].context.startswith(f"Forked from {x} (open in another process; ")
    assert child.turns[1].user == "what did we decide?" and child.summary is not None

    _ask(a, "and redis for the cache")  # the first process carries on, and saves it all
    a.sendline("exit")
    a.expect("Goodbye!")
    a.expect(pexpect.EOF)
    a.close()
    assert a.exitstatus == 0
    parent = s.files()[x]
    assert [t.user for t in parent.turns] == ["we decided to use postgres",
                                              "and redis for the cache"]
    assert parent.summary is not None
    assert parent.header.continued_in == ()  # a fork is not the writer's to link
    listed = s.listing()
    assert listed[fork]["forked"] is True and listed[fork]["parent"] == x
    assert listed[x]["continued_in"] == [] and listed[x]["forked"] is False


def test_no_fork_and_piped_input_without_yes_refuse_with_one_line(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    a = s.holder()
    _say(a, "we decided to use postgres")
    x = s.wait_for_queries(1)
    before = (s.sessions / f"{x}.md").read_bytes()
    for extra, why in ((["--no-fork", "--yes"], "--no-fork was given"),
                       ([], "without a terminal a fork needs --yes")):
        b = s.piped("this line is never read\n", "--resume", "1", *extra)
        assert b.returncode == 1, b.stdout
        [line] = b.stderr.splitlines()
        assert line.startswith(f"rollchat: error: session {x} {BUSY}: {why}")
        assert list(s.files()) == [x]  # nothing made, nothing written
        assert (s.sessions / f"{x}.md").read_bytes() == before
    _, err = a.communicate("and redis for the cache\nexit\n", timeout=120)
    assert a.returncode == 0, err
    assert [t.user for t in s.files()[x].turns] == ["we decided to use postgres",
                                                    "and redis for the cache"]


def test_in_chat_resume_of_a_session_open_elsewhere_forks_or_refuses(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    a = s.holder()
    _say(a, "we decided to use postgres")
    x = s.wait_for_queries(1)
    before = (s.sessions / f"{x}.md").read_bytes()

    # piped without --yes: one error line, the chat goes on in its own session, nothing lost
    b = s.piped(f"hello from b\nresume {x}\nstill here\nexit\n")
    assert b.returncode == 0, b.stderr
    [refused] = _lines(b.stdout + b.stderr, BUSY)
    assert x in refused and "--yes" in refused
    [own] = [sid for sid in s.files() if sid != x]
    assert [t.user for t in s.files()[own].turns] == ["hello from b", "still here"]

    # with --yes (as in a terminal): told in one line, the own session is saved, then a fork
    c = s.piped(f"hello from c\nresume {x}\nafter the fork\nexit\n", "--yes")
    assert c.returncode == 0, c.stderr
    assert len(_lines(c.stdout + c.stderr, FORK_LINE)) == 1
    files = s.files()
    [c_own] = [sid for sid, t in files.items() if t.turns and t.turns[0].user == "hello from c"]
    [fork] = [sid for sid, t in files.items() if t.header.forked]
    assert files[c_own].summary is not None
    assert files[c_own].header.continued_in == ()  # it continues in the fork of x, not of it
    assert files[fork].header.resumed_from == x
    assert [t.user for t in files[fork].turns if t.kind == "query"] == ["after the fork"]
    assert (s.sessions / f"{x}.md").read_bytes() == before

    a.communicate("exit\n", timeout=120)
    assert a.returncode == 0
    assert s.files()[x].summary is not None and len(s.files()) == 4


def test_a_killed_process_leaves_no_stuck_lock(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    a = s.holder()
    _say(a, "we decided to use postgres")
    x = s.wait_for_queries(1)
    a.kill()
    a.communicate(timeout=60)
    b = s.piped("carry on\nexit\n", "--resume", "1")  # piped, no --yes: a fork would refuse
    assert b.returncode == 0, b.stderr
    assert not _lines(b.stdout + b.stderr, "another rollchat process")
    files = s.files()
    [child] = [sid for sid in files if sid != x]
    assert files[x].summary is not None  # the crashed session was summarized into its file
    assert files[x].header.continued_in == (child,)
    assert files[child].header.resumed_from == x and not files[child].header.forked
    assert "**Resumed From:** " + x in (s.sessions / f"{child}.md").read_text()


HOLD = r"""
import sys
from datetime import datetime, timezone
from pathlib import Path
from rollchat.storage.store import SessionStore
from rollchat.domain import Turn, Usage, answer_blocks

store = SessionStore(Path(sys.argv[1]))
now = datetime(2026, 11, 22, 14, 30, tzinfo=timezone.utc)
live = store.new_session(agent_key="assistant", agent="Assistant", agent_path="config:assistant",
                         model="offline", provider="offline", now=now)
live.append_turn(Turn("query", 1, now, "held", answer_blocks("yes"), usage=Usage(1, 1)),
                 "Assistant")
print(live.session_id, flush=True)
sys.stdin.readline()
live.close()
print("closed", flush=True)
sys.stdin.readline()
"""


def test_store_writes_refuse_a_session_another_process_holds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rollchat.storage.locks.BRIEF_WAIT", 0.2)
    root = tmp_path / "sessions"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(root)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdin is not None and holder.stdout is not None
    sid = holder.stdout.readline().strip()
    store = SessionStore(root)
    path = root / f"{sid}.md"
    before = path.read_bytes()
    summary = Summary("Initial session.", ("held",), (), ())
    assert store.open_elsewhere(sid)
    with pytest.raises(SessionBusyError, match=f"session {sid} is open in another rollchat"):
        store.finalize(sid, summary, total_queries=1, total_tokens=2)
    with pytest.raises(SessionBusyError, match="only that process writes it"):
        store.link_child(sid, "assistant_20261122_143100_abcd")
    assert path.read_bytes() == before
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert holder.stdout.readline().strip() == "closed"
    assert not store.open_elsewhere(sid)  # closed, though its process is still running
    store.finalize(sid, summary, total_queries=1, total_tokens=2)
    assert parse(path.read_text()).summary == summary
    holder.communicate("\n", timeout=60)


def test_a_session_of_this_process_nests_its_own_writes(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    now = datetime(2026, 11, 22, 14, 30, tzinfo=timezone.utc)
    live = store.new_session(agent_key="a", agent="A", agent_path="config:a", model="m",
                             provider="offline", now=now)
    assert not store.open_elsewhere(live.session_id)  # held here, not elsewhere
    store.finalize(live.session_id, Summary("Initial session.", (), (), ()), total_queries=0,
                   total_tokens=0)
    live.close()
    live.close()  # safe twice
    assert not SessionStore(tmp_path).open_elsewhere(live.session_id)


_FORKING_PARENT = """
import os, sys
from datetime import datetime, timezone
from pathlib import Path
import rollchat.storage.locks
from rollchat.storage.locks import SessionLocks
from rollchat.storage.store import SessionStore

rollchat.storage.locks.BRIEF_WAIT = 0.2
root = Path(sys.argv[1])
live = SessionStore(root).new_session(agent_key="a", agent="A", agent_path="config:a",
                                      model="m", provider="offline",
                                      now=datetime(2026, 11, 22, tzinfo=timezone.utc))
pid = os.fork()
if pid == 0:
    # the child is another process: the parent's session is open elsewhere for it
    os._exit(0 if SessionLocks(root).held_elsewhere(live.session_id) else 3)
_, status = os.waitpid(pid, 0)
print(live.session_id, os.waitstatus_to_exitcode(status), flush=True)
sys.stdin.readline()  # hold the session until the test has looked
live.close()
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_neither_shares_nor_drops_its_parents_locks(tmp_path: Path) -> None:
    # Forked in a fresh interpreter: forking this test process, which may hold threads of
    # other tests' HTTP servers, can deadlock the child on a lock one of them held.
    parent = subprocess.Popen([sys.executable, "-c", _FORKING_PARENT, str(tmp_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline().split()
        assert len(line) == 2, parent.communicate(timeout=30)
        sid, child_status = line
        assert child_status == "0"  # the child saw the session as held by another process
        # the child has exited: the parent still holds its session (a fresh process checks)
        check = subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                                "from rollchat.storage.locks import SessionLocks; "
                                "print(SessionLocks(Path(sys.argv[1])).held_elsewhere(sys.argv[2]))",
                                str(tmp_path), sid], capture_output=True, text=True, timeout=60)
        assert check.stdout.strip() == "True", check.stderr
        parent.communicate("\n", timeout=60)
        assert parent.returncode == 0
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_a_release_inside_the_registry_lock_does_not_deadlock(tmp_path: Path) -> None:
    """A SessionFile's weakref finalizer releases its session's lock; the garbage collector may
    run it on a thread that is inside the registry lock (making a FileLock allocates). CI hung
    there until pytest-timeout's alarm broke in (a plain Lock taken twice by one thread)."""
    import threading

    from rollchat.storage import locks as locks_module

    locks = locks_module.SessionLocks(tmp_path)
    assert locks.acquire("s1")

    def finalizer_inside_the_lock() -> None:
        with locks_module._registry_lock:  # as when the collector runs inside _lock
            locks.release("s1")

    worker = threading.Thread(target=finalizer_inside_the_lock, daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "release deadlocked inside the registry lock"
    assert not locks.held_elsewhere("s1")
