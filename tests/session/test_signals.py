"""SIGTERM and SIGHUP end the chat like ``exit``: the turns and the partial answer saved, a
summary written (the local one when the model's is slow), the terminal's modes restored,
exit status 128 + the signal. Real processes, real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pexpect
import pytest

from rollchat.storage.transcript import SUMMARY_END, SUMMARY_START, parse
from tests.e2e import PROMPT, clean_env, default_signals, spawn, start_piped, write_config
from tests.forkserver import Forked
from tests.wire_servers import WireServer, held, openai_server, stall, text

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession

__all__ = ["openai_server"]  # the fixture, imported for pytest

HELIX_SUMMARY = (f"{SUMMARY_START}\n**Background Context:** A chat about editors.\n\n"
                 "**Current Session Summary:**\n**Topics Discussed:**\n- the helix editor\n\n"
                 f"**Decisions Made:**\n- none\n\n**Pending:**\n- a story\n{SUMMARY_END}")


def _only_session(tmp_path: Path) -> str:
    files = sorted((tmp_path / "sessions").glob("*.md"))
    assert len(files) == 1, files
    return files[0].read_text()


def _read_until(proc: subprocess.Popen[str] | Forked, text: str) -> None:
    """Read the chat's output up to a line with ``text`` (it must not end before)."""
    assert proc.stdout is not None
    for line in iter(proc.stdout.readline, ""):
        if text in line:
            return
    raise AssertionError(f"the chat ended before {text!r}: {proc.communicate(timeout=30)}")


def test_sigterm_while_an_answer_streams_saves_it_and_restores_the_terminal(
        openai_server: WireServer, tmp_path: Path) -> None:
    """The answer's first paragraph arrives, then the server holds the rest until the chat
    hangs up: the SIGTERM lands while the answer streams however late it is sent (the offline
    model's answer ended 8 s after the word this test waited for)."""
    first = "Once upon a time there were editors."
    openai_server.push(text("Helix is a fine editor."),
                       held(first, "And terminals, and everything else."), text(HELIX_SUMMARY))
    child = spawn(tmp_path, "--base-url", openai_server.url, "--model", "gpt-4o",
                  env=clean_env(tmp_path / "home", OPENAI_API_KEY="test"),
                  forked=True)  # (a signal while streaming, not during a start)
    child.expect(PROMPT)
    child.sendline("my favourite editor is helix")
    child.expect("Helix is a fine editor.")
    child.expect(PROMPT)
    child.sendline("tell me a long story about editors and terminals and everything else")
    child.expect_exact(first)  # streaming, with the terminal's echo off
    assert not termios.tcgetattr(child.child_fd)[3] & termios.ECHO
    child.kill(signal.SIGTERM)
    child.expect("SIGTERM received: saving the session")
    child.expect(pexpect.EOF, timeout=30)
    echo_back = termios.tcgetattr(child.child_fd)[3] & termios.ECHO
    child.close()
    assert child.exitstatus == 128 + signal.SIGTERM
    assert echo_back
    t = parse(_only_session(tmp_path))
    assert [turn.status for turn in t.turns] == ["ok", "interrupted"]
    assert t.turns[1].assistant.strip() == first  # the partial answer is kept
    assert t.summary is not None and t.header.total_queries == 2
    assert not t.summary.fallback and "helix" in " ".join(t.summary.topics)


def test_sighup_at_the_prompt_saves_with_a_summary(tmp_path: Path) -> None:
    """The terminal closed: nothing can be shown any more, the session is still summarized."""
    child = spawn(tmp_path, forked=True)  # (a signal at the prompt, not during a start)
    child.expect(PROMPT)
    child.sendline("we decided to ship on friday")
    child.expect("Time:")
    child.expect(PROMPT)  # at the prompt, waiting for input
    child.kill(signal.SIGHUP)
    child.expect(pexpect.EOF, timeout=30)
    child.close()
    assert child.exitstatus == 128 + signal.SIGHUP
    t = parse(_only_session(tmp_path))
    assert [turn.status for turn in t.turns] == ["ok"]
    assert t.summary is not None and not t.summary.fallback


def test_sigterm_with_a_slow_model_saves_the_local_summary_quickly(
        openai_server: WireServer, tmp_path: Path) -> None:
    """Ending on a signal the model gets a few seconds for its summary (a shutdown does not
    wait): a server that stalls gets the local summary saved instead, and the chat ends."""
    openai_server.push(text("Postgres it is."), stall(60))
    proc = start_piped(  # a process of its own (forked: the signal is not about its start)
        tmp_path, "--base-url", openai_server.url, "--model", "gpt-4o",
        "--exit-summary", "model",  # the model's summary to wait for (auto: local here)
        env=clean_env(tmp_path / "home", OPENAI_API_KEY="test"))
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("we decided to use postgres\n")
    proc.stdin.flush()  # stdin stays open: the chat waits for the next line
    _read_until(proc, "Time:")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)  # the stall is 60 s: the chat did not wait for it
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "SIGTERM received: saving the session, then exiting" in out
    assert "no summary from the model within 3s" in out  # said why the summary is local
    t = parse(_only_session(tmp_path))
    assert [turn.assistant for turn in t.turns] == ["Postgres it is."]
    assert t.summary is not None and t.summary.fallback
    assert any("postgres" in d for d in t.summary.decisions)


def test_a_second_signal_while_saving_does_not_cut_the_save(
        openai_server: WireServer, tmp_path: Path) -> None:
    """The model's summary never comes, so the chat waits its few seconds for it: the second
    signals are sent once the summary is asked, inside that wait (the offline model's summary
    took 1 s: signals sent later on a loaded machine came after the save, testing nothing)."""
    openai_server.push(text("Noted: the release is on monday."), stall(600))
    proc = start_piped(  # a process of its own (forked: the signal is not about its start)
        tmp_path, "--base-url", openai_server.url, "--model", "gpt-4o",
        "--exit-summary", "model",  # the model's summary to wait for (auto: local here)
        env=clean_env(tmp_path / "home", OPENAI_API_KEY="test"))
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("note that the release is on monday\n")
    proc.stdin.flush()
    _read_until(proc, "Time:")
    proc.send_signal(signal.SIGTERM)
    _read_until(proc, "SIGTERM received")
    deadline = time.monotonic() + 60  # a ceiling: the summary is asked at once
    while len(openai_server.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(openai_server.requests) == 2  # the summary is asked; the chat waits for it
    proc.send_signal(signal.SIGTERM)  # impatient: a second one while the summary is written
    proc.send_signal(signal.SIGHUP)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "no summary from the model within 3s" in out  # (it waited, then the local one)
    t = parse(_only_session(tmp_path))
    assert [turn.status for turn in t.turns] == ["ok"] and t.summary is not None


def test_sighup_right_after_enter_keeps_the_message(tmp_path: Path) -> None:
    """The signal lands as the prompt accepts the line, while the chat is still being built,
    an import runs or the answer starts (the moment varies): the message is saved whichever
    it was. (Once the chat has read the line: what the terminal still held when it hung up
    was never typed into the chat.)"""
    cfg = write_config(tmp_path / "rollchat.yml", "ui:\n  offline_word_delay: 0.1\n")
    child = spawn(tmp_path, "--config", str(cfg))
    child.expect(PROMPT)
    child.sendline("my build server is called hal")
    child.expect("called hal")  # drawn by the prompt: it has read the line and the Enter
    child.kill(signal.SIGHUP)
    child.expect(pexpect.EOF, timeout=30)
    child.close()
    assert child.exitstatus == 128 + signal.SIGHUP
    t = parse(_only_session(tmp_path))
    assert [turn.user for turn in t.turns] == ["my build server is called hal"]
    assert t.summary is not None


def test_pty_children_get_default_signal_dispositions(tmp_path: Path) -> None:
    """pytest run in the background by a shell ignores SIGINT; the chats the pty tests start
    must not inherit that, or Ctrl-C would do nothing in them."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        child = pexpect.spawn(sys.executable, ["-c", "import signal; print(signal.getsignal("
                                               "signal.SIGINT) is signal.default_int_handler)"],
                              preexec_fn=default_signals, encoding="utf-8")
        child.expect(pexpect.EOF)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert child.before.strip() == "True"


def _once_typed(prompts: list[PromptSession[str]], typed: str,
                then: Callable[[], None]) -> None:
    """Run ``then`` once the prompt runs and holds ``typed`` (a signal sent at a fixed delay
    instead came, on a loaded machine, while the prompt was still being built, outside the
    REPL's loop: the test's process got the Terminated)."""
    deadline = time.monotonic() + 60  # a ceiling: the prompt is up long before
    while time.monotonic() < deadline:
        if prompts and prompts[0].app.is_running and prompts[0].default_buffer.text == typed:
            then()
            return
        time.sleep(0.01)


@pytest.mark.parametrize("accepted", [True, False])
def test_a_signal_as_enter_is_accepted_keeps_the_message(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, accepted: bool) -> None:
    """The race the test above can only sometimes hit, made exact: the terminal hangs up just
    as the prompt accepts the line (before it returns it). The message is kept; a line still
    being typed (no Enter) is not sent."""
    from prompt_toolkit.buffer import Buffer
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from rollchat import interrupts
    from rollchat.ui import repl
    from rollchat.ui.starting import Starting
    from tests.ui.test_app import make_app

    monkeypatch.setattr(interrupts, "_received", [])  # (this process's own, for this test)
    monkeypatch.setattr(interrupts, "_settled", [])
    h = make_app(tmp_path)
    chat = Starting(lambda: (h.app, []), label=" starting ", out=h.app.out)
    chat.get()
    hang_up = lambda *args: os.kill(os.getpid(), signal.SIGTERM)  # noqa: E731
    typed = "my build server is called hal"
    prompts: list[PromptSession[str]] = []  # the REPL's prompt, once built
    real_prompt = repl._prompt_session

    def kept_prompt(*args: Any, **kwargs: Any) -> PromptSession[str]:
        prompts.append(real_prompt(*args, **kwargs))
        return prompts[-1]

    monkeypatch.setattr(repl, "_prompt_session", kept_prompt)
    if accepted:  # right after the accept (the line is the prompt's result, not returned yet)
        monkeypatch.setattr(Buffer, "append_to_history", hang_up)
    with create_pipe_input() as keys, interrupts.ending_signals():
        keys.send_text(typed + ("\r" if accepted else ""))
        if not accepted:  # typed, not sent: the signal comes at the prompt, once it holds
            threading.Thread(target=_once_typed, args=(prompts, typed, hang_up),  # the text
                             daemon=True).start()
        repl.run_interactive(chat, history_file=tmp_path / "history", input=keys,
                             output=DummyOutput())
    assert interrupts.ending() == signal.SIGTERM
    files = sorted((tmp_path / "sessions").glob("*.md"))
    if not accepted:
        assert files == []  # never sent: nothing to keep
        return
    t = parse(files[0].read_text())
    assert [(x.user, x.status) for x in t.turns] == [("my build server is called hal",
                                                      "interrupted")]
    assert t.summary is not None


def test_a_chat_that_ends_leaves_a_timer_it_did_not_arm_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The end of a chat disarms only the SIGALRM timer rollchat armed itself (to put off a
    signal that came during an import): a timer someone else armed (a test runner's per-test
    timeout, an embedding program's) keeps running. It was cancelled, and with it the
    timeout that would have ended a test hung after its chat."""
    from rollchat import interrupts

    monkeypatch.setattr(interrupts, "_settled", [])
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 600)
        with interrupts.ending_signals():
            pass
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left <= 600
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not fired
