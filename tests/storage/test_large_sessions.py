"""What rollchat writes, it reads: a chat whose two tool results are 35 MB each makes a 70 MB
session file (more than the 64 MB that reading once refused); killed after its second turn,
it is shown, exported, compacted, audited and resumed, and the resumed chat reads the end of
its second tool result through ``session_archive_read``."""

from __future__ import annotations

import json
import signal
import tracemalloc
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pexpect
import pytest

from rollchat.domain import Summary, Turn, Usage, answer_blocks
from rollchat.storage.store import MAX_FILE_BYTES, SessionStore
from rollchat.storage.transcript import parse, render_finalized, render_linked, render_titled
from tests.e2e import PROMPT, clean_env, run_piped, spawn, write_config

RESULT = 35_000_000  # characters of each tool result
AGENT = f'''
name = "Worker"
approval = "auto"


def big(n: int) -> str:
    """A large result."""
    line = "abcdefghij" * 9 + "\\n"
    return f"R{{n}}:\\n" + line * ({RESULT} // len(line)) + f":end{{n}}"
'''


def _cli(cwd: Path, env: dict[str, str], *args: str, stdin: str = "") -> str:
    done = run_piped(cwd, stdin, *args, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _crashed_chat(cwd: Path, env: dict[str, str]) -> Path:
    """Two turns, each calling ``big``, then a SIGKILL: the file has both turns (each is on
    disk before its footer is drawn) and no summary."""
    child = spawn(cwd, str(cwd / "worker.py"), "--config", str(cwd / "rollchat.yml"),
                  "--sessions-dir", "sessions", env=env, timeout=300, forked=True)
    for n in (1, 2):
        child.expect(PROMPT)
        child.sendline(f'use big {{"n": {n}}}')
        child.expect("Time:")
    child.kill(signal.SIGKILL)
    child.expect(pexpect.EOF)
    child.close()
    [path] = (cwd / "sessions").glob("*.md")
    return path


@pytest.mark.timeout(900)  # a 70 MB file through six processes on a shared machine
def test_a_70_mb_session_is_shown_exported_compacted_audited_and_resumed(
        tmp_path: Path) -> None:
    (tmp_path / "worker.py").write_text(AGENT)
    write_config(tmp_path / "rollchat.yml", "ui:\n  offline_word_delay: 0\n")
    env = clean_env(tmp_path / "home")
    path = _crashed_chat(tmp_path, env)
    assert path.stat().st_size > max(MAX_FILE_BYTES, 2 * RESULT)
    saved = parse(path.read_text())
    assert saved.summary is None and [len(t.tools) for t in saved.turns] == [1, 1]
    second = saved.turns[1].tools[0]
    assert len(second.result) == len("R2:\n:end2") + RESULT - RESULT % 91
    del saved
    sid = path.stem
    where = ["--config", str(tmp_path / "rollchat.yml"), "--sessions-dir", "sessions"]

    shown = _cli(tmp_path, env, "show", sid, *where)
    assert "R1:" in shown and "R2:" in shown and "Query 2" in shown  # results cut for reading
    exported = json.loads(_cli(tmp_path, env, "export", sid, "--format", "json", *where))
    assert "end2" in json.dumps(exported)[-RESULT // 2:]
    del exported

    compacted = _cli(tmp_path, env, "compact", sid, *where)  # prints the summary it makes
    assert compacted.startswith(f"# {sid}: written by offline") and "big" in compacted

    asked = (f'use session_archive_read {{"tool_call": "{second.call.id}", '
             f'"offset": {len(second.result) - 20}}}')
    _cli(tmp_path, env, str(tmp_path / "worker.py"), "--resume", "1", "--yes",
         *where, stdin=asked + "\n")
    parent, child = sorted((tmp_path / "sessions").glob("*.md"),
                           key=lambda p: p.stat().st_size, reverse=True)
    assert parent == path and parse(parent.read_text()).summary is not None
    [turn] = [t for t in parse(child.read_text()).turns if t.kind == "query"]
    [read] = turn.tools
    assert read.call.name == "session_archive_read" and ":end2" in read.result
    assert not read.result.startswith("error")
    # two tool calls name nothing to keep: audit says so (not "keeps 0 of 0 named items")
    assert "The session named no decisions, open tasks, files or figures for the summary to " \
           "keep." in _cli(tmp_path, env, "audit", sid, *where)


# ---------------------------------------------------------------- what an import writes

CONTROLS = "".join(map(chr, [*range(1, 9), 11, 12, *range(14, 32), 127]))


def test_an_import_grows_by_at_most_3x(tmp_path: Path) -> None:
    """A markdown chat of control bytes (each one byte read, its control picture three bytes
    written: the most any byte becomes, as an invalid UTF-8 byte becomes U+FFFD) writes a
    session at most 3 times its size, plus the header and the turns' own lines. It wrote 4.5x
    here (6x for 36 MB) while the local summary kept each spaceless message whole; its bound
    in characters (max_words*12, the summary's) keeps it to 3.0x."""
    body = CONTROLS * (100_000 // len(CONTROLS))
    source = tmp_path / "chat.md"
    source.write_text("".join(f"## User\n\nq{n} {body}\n\n## Assistant\n\na{n} {body}\n\n"
                              for n in range(10)), encoding="utf-8")
    write_config(tmp_path / "rollchat.yml", "agents:\n  assistant:\n    provider: offline\n")
    _cli(tmp_path, clean_env(tmp_path / "home"), "import", str(source), "--local-summary",
         "--config", str(tmp_path / "rollchat.yml"), "--sessions-dir", "sessions")
    [path] = (tmp_path / "sessions").glob("*.md")
    assert len(parse(path.read_text()).turns) == 10
    assert path.stat().st_size <= 3 * source.stat().st_size + 64 * 1024


# ---------------------------------------------------------------- what a rewrite holds

T0 = datetime(2026, 12, 7, 23, 22, tzinfo=timezone.utc)
SUMMARY = Summary("Counted lines.", ("lines",), ("keep them",), ("count again",))


@pytest.mark.parametrize("rewrite", [
    pytest.param(lambda text: render_finalized(text, SUMMARY, total_queries=1, total_tokens=9),
                 id="finalize"),
    pytest.param(lambda text: render_linked(text, "worker_20261207_232200_0001"), id="link"),
    pytest.param(lambda text: render_titled(text, "Counting"), id="title"),
])
def test_a_header_rewrite_holds_a_few_copies_of_the_file_not_its_lines(
        tmp_path: Path, rewrite: Callable[[str], str]) -> None:
    """Finalizing a session (a resume of a crashed one, ``compact``), linking it to its child
    and titling it change its header and its end: the body between is kept as it is, never
    cut into lines. Cut into lines, a 70 MB session of short lines (a tool's listing) held
    17 times its size at once (1.2 GB) to be finalized, 5 times to be linked, 12 to be
    titled; a resume of a crashed one does the first two (their lines: 0.6 of its 3 CPU s)."""
    store = SessionStore(tmp_path)
    live = store.new_session(agent_key="worker", agent="Worker", agent_path="config:worker",
                             model="m", provider="offline", now=T0)
    live.append_turn(Turn("query", 1, T0, "count", answer_blocks("a\n" * 200_000),
                          usage=Usage(10, 20)), "Worker")
    text = store.read_text(live.session_id)
    tracemalloc.start()
    try:
        new = rewrite(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4.5 * len(text)  # (its lines: 5 to 17 times)
    assert parse(new).turns == parse(text).turns
