"""The chat loop end to end: a pseudo-terminal session where Ctrl-C is the point, the chat as a
terminal runs it in process (tests/terminal.py), and piped input (offline model; a local wire
server where a Ctrl-C must land while an answer streams)."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pexpect

from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse
from tests.e2e import PROMPT, clean_env, run_piped, spawn, write_config
from tests.terminal import Terminal, run_chat
from tests.wire_servers import WireServer, held, openai_server, text

__all__ = ["openai_server"]  # the fixture, imported for pytest

ESC = re.compile(r"\x1b")
STORY_FIRST = "Once upon a time there were editors."
SUMMARY = (f"{SUMMARY_START}\n**Background Context:** A chat about editors.\n\n"
           "**Current Session Summary:**\n**Topics Discussed:**\n- the helix editor\n\n"
           f"**Decisions Made:**\n- none\n\n**Pending:**\n- a story\n{SUMMARY_END}")


def _wire_chat(tmp_path: Path, server: WireServer, *args: str) -> pexpect.spawn:
    """A chat in a terminal with a model served by ``server``, at its first prompt."""
    child = spawn(tmp_path, "--base-url", server.url, "--model", "gpt-4o", *args,
                  env=clean_env(tmp_path / "home", OPENAI_API_KEY="test"),
                  forked=True)  # (keys and the terminal's modes, not a start)
    child.expect(PROMPT)
    return child


def _session_files(sessions: Path) -> list[Path]:
    return sorted(sessions.glob("*.md"))


def test_pty_two_turns_interrupt_and_exit(openai_server: WireServer, tmp_path: Path) -> None:
    """The third answer's first paragraph arrives, then the server holds the rest until the
    chat hangs up: the Ctrl-C lands while it streams however late it is sent (the offline
    model's answer ended 6 s after the word this test waited for)."""
    openai_server.push(text("Helix is a fine editor."), text("You mentioned helix."),
                       held(STORY_FIRST, "And terminals, and everything else."),
                       text(SUMMARY))
    child = _wire_chat(tmp_path, openai_server)
    child.sendline("my favourite editor is helix")
    child.expect("fine editor")
    child.expect(PROMPT)
    child.sendline("which editor did I mention?")
    child.expect("You mentioned helix")
    child.expect(PROMPT)
    child.sendline("tell me a long story about editors and terminals and everything else")
    child.expect("Assistant:")
    child.expect_exact(STORY_FIRST)  # the answer has started streaming
    child.sendintr()
    child.expect("interrupted")
    child.expect(PROMPT)
    child.sendline("exit")
    child.expect("Goodbye!")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    # the second question went with the first turn
    assert "my favourite editor is helix" in json.dumps(openai_server.bodies[1]["messages"])

    sessions = tmp_path / "sessions"
    files = _session_files(sessions)
    assert len(files) == 1
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(sessions.stat().st_mode) == 0o700
    assert (sessions / ".gitignore").read_text().strip().endswith("*")
    t = parse(files[0].read_text())
    assert [turn.status for turn in t.turns] == ["ok", "ok", "interrupted"]
    assert t.turns[2].assistant.strip() == STORY_FIRST  # the part that came, kept
    assert t.header.total_queries == 3 and t.summary is not None
    history = (tmp_path / "home" / "data" / "rollchat" / "history")
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    assert "which editor did I mention?" in history.read_text()


def test_multiline_input_with_escape_enter(tmp_path: Path) -> None:
    def script(term: Terminal) -> None:  # as a terminal runs the chat (tests/terminal.py)
        term.expect(PROMPT)
        term.send("first line")
        term.send("\x1b\r")  # Esc then Enter inserts a newline
        term.send("second line\r")
        term.expect("Assistant:")
        term.expect(PROMPT)
        term.sendline("exit")

    assert run_chat(tmp_path, [], script) == 0
    t = parse(_session_files(tmp_path / "sessions")[0].read_text())
    assert t.turns[0].user == "first line\nsecond line"


def test_piped_input_answers_each_line_without_escape_codes(tmp_path: Path) -> None:
    result = run_piped(tmp_path, "hi\nmy cat is called Miso\nwhat is my cat called?\n")
    assert result.returncode == 0, result.stderr
    assert not ESC.search(result.stdout)
    assert "Miso" in result.stdout and "Goodbye!" in result.stdout
    t = parse(_session_files(tmp_path / "sessions")[0].read_text())
    assert [turn.user for turn in t.turns] == ["hi", "my cat is called Miso",
                                               "what is my cat called?"]
    assert t.summary is not None  # end of input saves with a summary


def test_piped_unknown_command_and_help(tmp_path: Path) -> None:
    result = run_piped(tmp_path, "/frobnicate\nhelp\n/exit\nnot sent\n")
    assert result.returncode == 0
    assert "unknown command /frobnicate" in result.stdout
    assert "compact [focus]" in result.stdout
    assert not (tmp_path / "sessions").exists() or not _session_files(tmp_path / "sessions")


def test_no_save_writes_nothing(tmp_path: Path) -> None:
    result = run_piped(tmp_path, "hello\n", "--no-save")
    assert result.returncode == 0 and "Hello" in result.stdout
    assert not (tmp_path / "sessions").exists()
    # the goodbye does not claim a save that never happened
    assert "Saved session" not in result.stdout
    assert "was kept in memory only (--no-save): nothing was written" in result.stdout


def test_sessions_dir_env_and_flag(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home", ROLLCHAT_SESSIONS_DIR=str(tmp_path / "from-env"))
    assert run_piped(tmp_path, "hi\n", env=env).returncode == 0
    assert _session_files(tmp_path / "from-env")
    assert run_piped(tmp_path, "hi\n", "--sessions-dir", "flagdir", env=env).returncode == 0
    assert _session_files(tmp_path / "flagdir")


def test_usage_and_config_errors_exit_2(tmp_path: Path) -> None:
    bad = write_config(tmp_path / "bad.yml", "session:\n  compact_threshold: 7\n")
    result = run_piped(tmp_path, "", "--config", str(bad))
    assert result.returncode == 2
    assert "compact_threshold" in result.stderr and ":2:" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_piped(tmp_path, "", "--provider", "bogus")
    assert result.returncode == 2
    result = run_piped(tmp_path, "", "--provider", "anthropic")
    assert result.returncode == 2 and "ANTHROPIC_API_KEY" in result.stderr


def test_version_and_help(tmp_path: Path) -> None:
    result = run_piped(tmp_path, "", "--version")
    assert result.returncode == 0 and result.stdout.startswith("rollchat ")
    result = run_piped(tmp_path, "", "--help")
    assert result.returncode == 0 and "--sessions-dir" in result.stdout


def test_pasted_multiline_text_arrives_whole(tmp_path: Path) -> None:
    def script(term: Terminal) -> None:  # as a terminal runs the chat (tests/terminal.py)
        term.expect(PROMPT)
        term.send("\x1b[200~def f():\n    return 42\n\x1b[201~")  # a bracketed paste
        term.send("\r")
        term.expect("Assistant:")
        term.expect(PROMPT)
        term.sendline("exit")

    assert run_chat(tmp_path, [], script) == 0
    t = parse(_session_files(tmp_path / "sessions")[0].read_text())
    assert [turn.user for turn in t.turns] == ["def f():\n    return 42\n"]


def test_piped_output_has_no_trailing_padding(tmp_path: Path) -> None:
    result = run_piped(tmp_path, "hi\nwhat is a token bucket?\n")
    assert result.returncode == 0
    assert all(line == line.rstrip(" ") for line in result.stdout.split("\n"))


def test_pty_ctrl_c_while_streaming_is_not_echoed_and_echo_comes_back(
        openai_server: WireServer, tmp_path: Path) -> None:
    """An echoed ^C under rich's live region shifts it a line: its erase then leaves a
    duplicated line behind. Echo is off while an answer streams, back on at the prompt. (The
    answer is held after its first paragraph until the chat hangs up: the offline model's
    ended a few seconds after the word this test waited for, then echo was back on.)"""
    openai_server.push(held(STORY_FIRST, "A token bucket refills at a steady rate."))
    child = _wire_chat(tmp_path, openai_server, "--no-save")
    child.sendline("please explain in detail how a token bucket rate limiter works")
    child.expect_exact(STORY_FIRST)
    assert child.getecho() is False
    child.sendintr()
    child.expect("interrupted: partial answer kept")
    assert "^C" not in child.before
    child.expect(PROMPT)
    child.sendeof()
    child.expect("Goodbye!")
    assert child.getecho() is True
    child.expect(pexpect.EOF)
