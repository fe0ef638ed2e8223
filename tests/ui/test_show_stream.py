"""``rollchat show`` of a large session holds one turn at a time, piped and in a terminal (the
pager is fed as the turns are drawn, not given the whole text at the end): its peak memory
stays well under the file's size; what it prints is what it printed from the parsed file; a
turn that cannot be read further on ends it there, after everything before it was shown."""

from __future__ import annotations

import os
import re
import sys
import traceback
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path

import pytest

from rollchat.domain import SessionHeader, Summary
from rollchat.storage.transcript import parse
from rollchat.storage.transcript.stream import TranscriptStream, file_lines
from rollchat.ui.show import show
from tests.ui.show_sessions import write_session

WHEN = datetime(2026, 5, 1, 9, 0, 5, tzinfo=timezone.utc)
HEADER = SessionHeader("assistant_20260501_090000_a1a1", WHEN, "Assistant", "agents/a.md",
                       "claude-sonnet-4-5", "anthropic", total_queries=800)


def _session(path: Path, count: int) -> Path:
    """``count`` turns of prose (3 kB each), every 50th one that rich draws (a list, a tool
    call), and a summary."""
    return write_session(path, HEADER, count, paragraphs=40, drawn=(50, 24), summary=Summary(
        background="A long parser session.", topics=(), decisions=("keep the parser",),
        pending=()))


def _shown(path: Path, out: Path, *, terminal: bool, traced: bool = False) -> int:
    """``show`` of the file at ``path`` with stdout going to ``out``; the peak of memory
    allocated meanwhile when ``traced``."""
    with open(out, "w", encoding="utf-8") as stdout, open(path, "rb") as f:
        real = sys.stdout
        sys.stdout = stdout
        if traced:
            tracemalloc.start()
        try:
            show(TranscriptStream(file_lines(f)), terminal=terminal)
            return tracemalloc.get_traced_memory()[1] if traced else 0
        finally:
            tracemalloc.stop()
            sys.stdout = real


def _peak(path: Path, out: Path, *, terminal: bool) -> int:
    """The peak while showing ``path``, after a first show of a short session (rich's and
    markdown's first imports and caches are not the session's), in a forked child: its only
    thread is the one showing (tracemalloc counts every thread's allocations, and in the test
    process threads other tests left, servers and relays, allocate meanwhile: 0.78 MB alone
    was 2.3 MB once in the suite)."""
    def peak() -> int:
        _shown(_session(path.with_name("warm.md"), 30), out, terminal=terminal)
        return _shown(path, out, terminal=terminal, traced=True)

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the peak on the pipe, or the traceback on stderr
        code = 1
        try:
            os.close(read)
            os.write(write, str(peak()).encode())
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as answer:
        text = answer.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and text, "the show failed (stderr above)"
    return int(text)


def test_piped_show_holds_one_turn_not_the_session(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.md", 800)
    size = path.stat().st_size
    out = tmp_path / "out.txt"
    peak = _peak(path, out, terminal=False)
    shown = out.read_text(encoding="utf-8")
    assert "Query 800 · 2026-05-01 09:13:24" in shown and "keep the parser" in shown
    assert "• first We decided to keep the parser number 24" in shown
    assert peak < size / 2, (peak, size)  # the text alone is ``size``; parsed, several times it


def test_show_in_a_terminal_feeds_the_pager_as_it_draws(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path / "s.md", 800)
    size = path.stat().st_size
    paged = tmp_path / "paged.txt"
    monkeypatch.setenv("PAGER", f"cat > {paged}")
    monkeypatch.setenv("COLUMNS", "100")
    peak = _peak(path, tmp_path / "screen.txt", terminal=True)
    text = paged.read_text(encoding="utf-8")
    assert "\x1b[" in text
    plain = re.sub("\x1b\\[[0-9;]*m", "", text)
    assert "Query 800 · 2026-05-01 09:13:24" in plain and "keep the parser" in plain
    # rich's own pager held the whole drawn text and its segments (many times ``size``); what
    # is left is rich's bounded caches of measured lines
    assert peak < size, (peak, size)


def test_streamed_show_prints_what_the_parsed_file_printed(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.md", 120)
    streamed, whole = tmp_path / "streamed.txt", tmp_path / "whole.txt"
    _shown(path, streamed, terminal=False)
    real = sys.stdout
    with open(whole, "w", encoding="utf-8") as stdout:
        sys.stdout = stdout
        try:
            show(parse(path.read_text(encoding="utf-8")), summary_dropped=False, terminal=False)
        finally:
            sys.stdout = real
    assert streamed.read_text(encoding="utf-8") == whole.read_text(encoding="utf-8")


def test_a_broken_turn_far_on_ends_show_there_after_the_turns_before_it(
        tmp_path: Path) -> None:
    """Piped and in the pager, the turns before a broken one are shown (the whole file was
    parsed first: nothing was); then one line names the file and the line; exit 1."""
    from typer.testing import CliRunner

    from rollchat.cli.app import build_cli
    from tests.e2e import clean_env, spawn

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    path = _session(sessions / f"{HEADER.session_id}.md", 120)
    lines = path.read_text(encoding="utf-8").split("\n")
    at = lines.index("## Query 100 (09:01:44)")
    lines.insert(at + 2, "*Bogus:* field")
    path.write_text("\n".join(lines), encoding="utf-8")
    result = CliRunner().invoke(build_cli(), ["show", "1", "--sessions-dir", str(sessions)])
    assert result.exit_code == 1
    assert "Query 99 · " in result.stdout and "Query 100 · " not in result.stdout
    assert f"{HEADER.session_id}.md: line {at + 3}: unexpected line in a turn" in result.stderr
    paged = tmp_path / "paged.txt"
    child = spawn(tmp_path, "show", "1", "--sessions-dir", "sessions",
                  env=clean_env(tmp_path / "home", PAGER=f"cat > {paged}"))
    try:
        child.expect(f"line {at + 3}: unexpected line in a turn", timeout=60)
        child.expect("\\Z|$", timeout=60)
    finally:
        child.close(force=True)
    assert "Query 99 · " in re.sub("\x1b\\[[0-9;]*m", "", paged.read_text(encoding="utf-8"))
