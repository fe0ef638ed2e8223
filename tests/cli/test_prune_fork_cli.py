"""`rollchat prune` and `rollchat fork` as a user runs them (issue 12, points 6 and 7):
retention that never deletes silently, a pruned parent that loses no context, and a fork
started from the command line."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest
from typer.testing import CliRunner

from rollchat.cli.app import build_cli
from rollchat.storage.transcript import parse
from tests.e2e import clean_env, run_piped, spawn
from tests.terminal import Terminal, run_chat
from tests.ui.test_app import Harness, chat, make_app

DAY = 86400.0
DECISION = "we decided to use redis for the cache"


def _age(path: Path, days: float) -> None:
    then = time.time() - days * DAY
    os.utime(path, (then, then))


def _prune(root: Path, *args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(build_cli(), ["prune", *args, "--sessions-dir", str(root)])
    return done.exit_code, done.stdout, done.stderr


def _parent_and_child(tmp_path: Path, *, finish: bool) -> tuple[Harness, Path, Path]:
    """A parent compacted into a child that had one turn; the child exited normally, or
    (``finish`` False) it crashed: no summary, its turn on disk."""
    h = make_app(tmp_path)
    chat(h, DECISION, "TODO: write tests for cache.py", "compact", "and what port?")
    state = h.app.session.state
    parent = h.store.path_for(state.resumed_from or "")
    child = h.store.path_for(state.session_id or "")
    if finish:
        h.app.exit()
    else:
        state.close()  # a crash: the lock goes, nothing more is written
        assert parse(child.read_text()).summary is None
    return h, parent, child


def test_bad_or_missing_age_exits_2_and_deletes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    code, _, err = _prune(root)
    assert code == 2 and "prune needs --older-than AGE" in err
    for bad in ("30", "30x", "-3d", "0d", "d", "1.5d", "30 days"):
        code, _, err = _prune(root, "--older-than", bad)
        assert code == 2 and "is not an age" in err and "30d" in err, (bad, err)


def test_prune_lists_asks_and_never_deletes_silently(tmp_path: Path) -> None:
    h, parent, child = _parent_and_child(tmp_path, finish=True)
    root = h.store.root
    _age(parent, 40)
    code, out, _ = _prune(root, "--older-than", "30d", "--dry-run")
    assert code == 0 and parent.stem in out and child.stem not in out.split("continued in")[0]
    assert "Dry run: nothing deleted." in out and f"continued in {child.stem}" in out
    assert "1 session in" in out and "last written 30 days ago" in out and "2 queries" in out
    code, _, err = _prune(root, "--older-than", "30d")  # no terminal, no -y: refused
    assert code == 1 and "not deleting without a terminal" in err
    assert parent.exists()
    code, out, _ = _prune(root, "--older-than", "6w", "-y")  # younger than 6 weeks: kept
    assert code == 0 and "No session" in out and parent.exists()
    code, out, _ = _prune(root, "--older-than", "30d", "-y")
    assert code == 0 and "Deleted 1 session" in out
    assert not parent.exists() and child.exists()
    assert not (root / ".locks" / f"{parent.stem}.lock").exists()


@pytest.mark.parametrize("finish", [True, False], ids=["summarized child", "crashed child"])
def test_a_pruned_parent_loses_no_context(tmp_path: Path, finish: bool) -> None:
    h, parent, child = _parent_and_child(tmp_path, finish=finish)
    _age(parent, 40)
    assert _prune(h.store.root, "--older-than", "30d", "-y")[0] == 0
    assert not parent.exists()
    later = make_app(tmp_path)
    chat(later, f"resume {child.stem}")
    restoration = later.provider.of("restore")[-1].messages[0].content
    assert DECISION in restoration.lower()  # the parent's decision, from the child's file
    assert "write tests for cache.py" in restoration


HOLD = """import sys
from pathlib import Path
from rollchat.storage.locks import SessionLocks
locks = SessionLocks(Path(sys.argv[1]))
assert locks.acquire(sys.argv[2])
print("held", flush=True)
sys.stdin.readline()
"""


def test_a_session_open_in_another_process_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rollchat.storage.locks.BRIEF_WAIT", 0.2)
    h = make_app(tmp_path)
    chat(h, DECISION)
    h.app.exit()
    [path] = h.files()
    _age(path, 40)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(h.store.root), path.stem],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, out, _ = _prune(h.store.root, "--older-than", "30d", "-y")
        assert code == 0 and "KEPT: open in another rollchat process" in out
        assert "Nothing to delete." in out and path.exists()
    finally:
        holder.communicate("\n", timeout=30)


def test_prune_asks_on_a_terminal(tmp_path: Path) -> None:
    h = make_app(tmp_path)
    chat(h, DECISION)
    h.app.exit()
    [path] = h.files()
    _age(path, 3)
    env = clean_env(tmp_path / "home")
    args = ["prune", "--older-than", "48h", "--sessions-dir", str(h.store.root)]

    def no(term: Terminal) -> None:
        term.expect(r"Delete this session\? \[y/N, Enter\]")
        term.sendline("")  # the default is no
        term.expect("Nothing deleted.")

    assert run_chat(tmp_path, args, no, env=env) == 1 and path.exists()

    def yes(term: Terminal) -> None:
        term.expect(r"\[y/N, Enter\]")
        term.sendline("y")
        term.expect("Deleted 1 session")

    assert run_chat(tmp_path, args, yes, env=env) == 0 and not path.exists()


def test_fork_from_the_command_line_starts_the_chat_in_a_fork(tmp_path: Path) -> None:
    h = make_app(tmp_path)
    chat(h, DECISION)
    h.app.exit()
    [original] = h.files()
    before = original.read_bytes()
    done = run_piped(tmp_path, "and what port?\nexit\n", "fork", original.stem[-4:],
                     "--sessions-dir", str(h.store.root))
    assert done.returncode == 0, done.stderr
    assert f"Forked {original.stem}" in done.stdout
    [fork] = [p for p in h.files() if p != original]
    forked = parse(fork.read_text())
    assert forked.header.resumed_from == original.stem and forked.header.forked
    assert [t.kind for t in forked.turns] == ["restored", "query"]
    assert original.read_bytes() == before  # left open: no 'Continued In', no change
    again = run_piped(tmp_path, "hi\nexit\n", "--model", "offline-2", "--sessions-dir",
                      str(h.store.root), "fork", original.stem)  # options before it count
    assert again.returncode == 0, again.stderr
    models = sorted(parse(p.read_text()).header.model for p in h.files())
    assert models == ["offline", "offline", "offline-2"]
    bad = run_piped(tmp_path, "", "fork", "nosuchsession", "--sessions-dir",
                    str(h.store.root))
    # a usage error, said before the banner, as with -p
    assert bad.returncode == 2 and "no session 'nosuchsession'" in bad.stderr
    assert bad.stdout == ""


def test_prune_ctrl_c_at_the_question_deletes_nothing_and_says_so(tmp_path: Path) -> None:
    h = make_app(tmp_path)
    chat(h, DECISION)
    h.app.exit()
    [path] = h.files()
    _age(path, 3)
    child = spawn(tmp_path, "prune", "--older-than", "48h", "--sessions-dir",
                  str(h.store.root), env=clean_env(tmp_path / "home"))
    child.expect(r"Delete this session\? \[y/N, Enter\]")
    child.sendintr()
    child.expect("Nothing deleted.")
    child.expect(pexpect.EOF)
    child.close()
    assert "Aborted" not in (child.before or "")
    assert child.exitstatus == 130 and path.exists()


def test_prune_keeps_a_session_written_while_the_question_waited(tmp_path: Path) -> None:
    """The list the user said yes to is what goes: a session written meanwhile (resumed,
    its summary edited) is young again, and is kept with a warning."""
    h = make_app(tmp_path)
    chat(h, DECISION)
    h.app.exit()
    [path] = h.files()
    _age(path, 3)

    def script(term: Terminal) -> None:
        term.expect(r"\[y/N, Enter\]")
        path.write_bytes(path.read_bytes())  # written now
        term.sendline("y")
        term.expect("written since it was listed")
        term.expect("Deleted 0 sessions")

    assert run_chat(tmp_path, ["prune", "--older-than", "48h", "--sessions-dir",
                                            str(h.store.root)], script,
                    env=clean_env(tmp_path / "home")) == 1
    assert path.exists()


def test_fork_help_names_its_argument_as_show_and_export_do() -> None:
    done = CliRunner().invoke(build_cli(), ["fork", "--help"])
    assert done.exit_code == 0
    assert "fork [OPTIONS] SESSION" in done.stdout and "N|ID" not in done.stdout


def test_prune_lists_titles_and_search_no_longer_finds_a_pruned_session(
        tmp_path: Path) -> None:
    """prune's list names each session by its title (a hostile one drawn harmlessly), and a
    pruned session leaves the sessions index with its file: `search` and `sessions` no
    longer show it."""
    import json

    from tests.sessions_helpers import write_session

    root = tmp_path / "sessions"
    old = "assistant_20260501_090000_a1a1"
    hostile = "assistant_20260501_091000_b2b2"
    kept = "assistant_20260501_092000_c3c3"
    _age(write_session(root, old, ["help with the cluster"], title="Kubernetes upgrade plan"),
         40)
    _age(write_session(root, hostile, ["hi"], minutes=10,
                       title="\x1b]0;pwned\x07 zebra\nfence"), 40)
    write_session(root, kept, ["kubernetes notes for later"], minutes=20)

    def search(*words: str) -> list[str]:
        done = CliRunner().invoke(build_cli(), ["search", *words, "--json", "--sessions-dir",
                                            str(root)])
        assert done.exit_code == 0, done.output
        return [hit["id"] for hit in json.loads(done.stdout)]

    assert search("upgrade") == [old]  # the index is built, the title searched
    code, out, _ = _prune(root, "--older-than", "30d", "--dry-run")
    assert code == 0
    assert f'{old} · ' in out and '· "Kubernetes upgrade plan"' in out
    assert "help with the cluster" not in out  # the title, not the first question
    [line] = [x for x in out.splitlines() if hostile in x]  # its title's newline: shown
    assert line.endswith('"^[]0;pwned^G zebra\\nfence"') and "\x1b" not in out
    assert "\x07" not in out
    code, out, _ = _prune(root, "--older-than", "30d", "-y")
    assert code == 0 and "Deleted 2 sessions" in out
    assert search("upgrade") == [] and search("zebra") == []
    assert search("kubernetes") == [kept]
    listed = CliRunner().invoke(build_cli(), ["sessions", "--json", "--sessions-dir", str(root)])
    assert [s["id"] for s in json.loads(listed.stdout)["sessions"]] == [kept]
