"""``rollchat -p "q" --fork SESSION`` as a script runs it (offline model, subprocesses, the
saved files read with the real parser): an older state of a chain continued in a linked fork,
the old session and the chain's newest left as they were; a resume of a session open elsewhere
says exactly what to type; usage errors in one line, exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rollchat.domain import Transcript
from rollchat.storage.transcript import parse
from tests.cli.test_oneshot import run
from tests.cli.test_oneshot_wire import interrupted_while_restoring, openai_server
from tests.cli.test_oneshot_wire import run as run_wired
from tests.cli.test_prune_fork_cli import HOLD
from tests.e2e import run_piped
from tests.wire_servers import WireServer, text

__all__ = ["openai_server"]  # the fixture, imported for pytest


def _json(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _read(tmp_path: Path, session_id: object) -> Transcript:
    return parse((tmp_path / "sessions" / f"{session_id}.md").read_text(encoding="utf-8"))


def _make_chain(tmp_path: Path) -> tuple[str, str]:
    """A session (old) continued by -c in another (newest): a chain of two."""
    old = _json(run(tmp_path, "-p", "remember the word pelican", "--output-format", "json"))
    new = _json(run(tmp_path, "-c", "-p", "what word?", "--output-format", "json"))
    assert _read(tmp_path, old["session_id"]).header.continued_in == (new["session_id"],)
    return str(old["session_id"]), str(new["session_id"])


# One worker runs the module (--dist loadgroup): its module fixture's chain (two runs) is
# made once, not on every worker.
pytestmark = pytest.mark.xdist_group("oneshot-fork")


@pytest.fixture(scope="module")
def made_chain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """One chain made by two runs, for every test of the module (each starts from a copy):
    its project directory, old, newest."""
    where = tmp_path_factory.mktemp("chain")
    return (where, *_make_chain(where))


@pytest.fixture
def chain(made_chain: tuple[Path, str, str], tmp_path: Path) -> tuple[str, str]:
    """The chain's sessions directory copied into this test's project (as written: the
    files, their times, the lock files): old, newest."""
    where, old, newest = made_chain
    shutil.copytree(where / "sessions", tmp_path / "sessions")
    return old, newest


def _files(tmp_path: Path) -> dict[str, bytes]:
    return {p.stem: p.read_bytes() for p in (tmp_path / "sessions").glob("*.md")}


def test_fork_continues_the_older_state_and_leaves_the_chain_as_it_was(
        tmp_path: Path, chain: tuple[str, str]) -> None:
    old, newest = chain
    before = _files(tmp_path)
    done = run(tmp_path, "-p", "and the old state?", "--fork", old)
    assert done.returncode == 0, done.stderr
    [fork] = set(_files(tmp_path)) - set(before)
    forked = _read(tmp_path, fork)
    assert forked.header.resumed_from == old and forked.header.forked
    assert f"**Forked From:** {old}" in (tmp_path / "sessions" / f"{fork}.md").read_text()
    assert [t.kind for t in forked.turns] == ["restored", "query"]
    query = forked.turns[1]
    assert query.user == "and the old state?"
    assert done.stdout == query.assistant + "\n"  # the answer alone
    assert f"Forked {old}" in done.stderr
    assert {k: v for k, v in _files(tmp_path).items() if k != fork} == before  # untouched
    # the fork is no part of the chain: resuming the old session still takes its newest
    again = _json(run(tmp_path, "-p", "go on", "--resume", old, "--output-format", "json"))
    assert _read(tmp_path, again["session_id"]).header.resumed_from == newest


@pytest.mark.parametrize("output_format", ["json", "stream-json"])
def test_fork_prints_json_as_resume_does(tmp_path: Path, chain: tuple[str, str],
                                        output_format: str) -> None:
    old, _ = chain
    done = run(tmp_path, "-p", "hello", "--fork", old[-4:], "--output-format", output_format)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result.get("type", "done") == "done" and result["exit_code"] == 0
    saved = _read(tmp_path, result["session_id"])
    assert result["session_path"] == str(tmp_path / "sessions" / f"{result['session_id']}.md")
    assert saved.header.resumed_from == old and saved.header.forked
    assert result["answer"] == saved.turns[-1].assistant


def test_resuming_an_older_state_names_the_option_that_forks_it(
        tmp_path: Path, chain: tuple[str, str]) -> None:
    old, newest = chain
    done = run(tmp_path, "-p", "go on", "--resume", old, "--output-format", "json")
    assert _read(tmp_path, _json(done)["session_id"]).header.resumed_from == newest
    assert f"the newest of the chain (--fork {old} branches off" in done.stderr
    assert "'fork " not in done.stderr  # the chat's command, which a script cannot type


@contextmanager
def _held(tmp_path: Path, session_id: str) -> Iterator[None]:
    """``session_id`` open in another process (its lock held) while the block runs."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / "sessions"),
                               session_id], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.communicate("\n", timeout=60)


@pytest.mark.parametrize("chosen", [["--resume", "OLD"], ["-c"]])
def test_a_newest_open_elsewhere_is_refused_with_what_to_type_and_that_works(
        tmp_path: Path, chain: tuple[str, str], chosen: list[str]) -> None:
    old, newest = chain
    before = _files(tmp_path)
    with _held(tmp_path, newest):
        refused = run(tmp_path, "-p", "go on", *[old if w == "OLD" else w for w in chosen],
                      "--output-format", "json")
        assert (refused.returncode, refused.stdout) == (2, ""), refused.stderr
        [line] = refused.stderr.splitlines()[-1:]
        assert line.startswith(f"rollchat: error: session {newest} is open in another ")
        typed = f"--fork {newest} in place of {chosen[0]}"
        assert typed in line and "a fork needs --yes" in line
        assert _files(tmp_path) == before  # nothing made, nothing written
        # what it said to type: a fork of the open session, made without --yes
        done = run(tmp_path, "-p", "go on", "--fork", newest, "--output-format", "json")
        assert "continuing in a fork" not in done.stderr  # asked for: not told as news
        forked = _read(tmp_path, _json(done)["session_id"])
    assert forked.header.resumed_from == newest and forked.header.forked
    assert {k: v for k, v in _files(tmp_path).items() if k in before} == before


@pytest.mark.parametrize(("args", "says"), [
    (["--fork", "1", "--resume", "1"], "--resume and --fork cannot be used together"),
    (["--fork", "1", "-c"], "--continue and --fork cannot be used together"),
    (["--fork", "nosuchsession"], "no session 'nosuchsession'"),
    (["--fork", " "], "--fork needs the session to branch off"),
    (["fork", "1"], "-p goes with --fork, not the 'fork' command"),
    (["sessions"], "-p answers one question in the chat, not with 'sessions'"),
])
def test_fork_usage_errors_exit_2_with_one_line(tmp_path: Path, chain: tuple[str, str],
                                                args: list[str], says: str) -> None:
    before = _files(tmp_path)
    done = run(tmp_path, "-p", "q", "--output-format", "json", *args)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("rollchat: error: ") and says in line
    assert _files(tmp_path) == before


def test_fork_without_p_starts_the_chat_in_a_fork(tmp_path: Path,
                                                 chain: tuple[str, str]) -> None:
    old, _ = chain
    done = run_piped(tmp_path, "hi\nexit\n", "--fork", old)
    assert done.returncode == 0, done.stderr
    assert f"Forked {old}" in done.stdout and "Goodbye" in done.stdout


def test_fork_of_a_live_chat_elsewhere_summarizes_it_for_the_fork_only(tmp_path: Path) -> None:
    """The session another terminal's chat is still writing has no summary yet: the fork is
    made from one written for it, and that chat's file is not touched."""
    from tests.sessions_helpers import write_session

    live = "assistant_20260501_090000_a1a1"
    path = write_session(tmp_path / "sessions", live, ["we decided to use postgres"])
    before = path.read_bytes()
    with _held(tmp_path, live):
        done = run(tmp_path, "-p", "what did we decide?", "--fork", live[-4:],
                   "--output-format", "json")
        result = _json(done)
    assert "has no summary; summarizing its transcript now (for the fork only" in done.stderr
    forked = _read(tmp_path, result["session_id"])
    assert forked.header.resumed_from == live and forked.header.forked
    assert "postgres" in forked.turns[0].user.lower()  # restored from the summary written
    assert path.read_bytes() == before


def test_ctrl_c_while_forking_ends_the_run_and_keeps_the_question(openai_server: WireServer,
                                                                 tmp_path: Path) -> None:
    """As with --resume: a Ctrl-C that cuts the fork's restoration short ends the run (130),
    the question kept as an interrupted turn of the fork, never sent."""
    openai_server.push(text("First answer."))
    first = _json(run_wired(openai_server, tmp_path, "-p", "first", "--output-format", "json"))
    result = interrupted_while_restoring(openai_server, tmp_path, "--fork",
                                         str(first["session_id"]))
    assert result["stop_reason"] == "interrupted" and len(openai_server.bodies) == 2
    fork = _read(tmp_path, result["session_id"])
    assert fork.header.forked and fork.header.resumed_from == first["session_id"]
    assert [(t.kind, t.status) for t in fork.turns] == [("restored", "interrupted"),
                                                        ("query", "interrupted")]
    assert fork.turns[1].user == "second question"
