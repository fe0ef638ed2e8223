"""Keys a user presses, as a terminal runs the chat (in process, tests/terminal.py): Tab
completion, and Up+Enter to send again a message the provider did not answer."""

from __future__ import annotations

from pathlib import Path

from rollchat.storage.transcript import parse
from tests.e2e import PROMPT, clean_env, write_config
from tests.terminal import Terminal, run_chat
from tests.wire_servers import WireServer, error, openai_server, text

__all__ = ["openai_server"]


def test_tab_completes_a_command(tmp_path: Path) -> None:
    # (the bottom toolbar is not drawn without cursor-position reports, which these tests turn
    # off: its text is tested in test_commands.py, and it was looked at in tmux)
    def script(term: Terminal) -> None:
        term.expect(PROMPT)
        term.send("/cont")
        term.expect("/cont")  # echoed
        term.send("\t")
        term.expect("ext")  # the completion is drawn (it runs asynchronously: wait for it)
        term.send("\r")
        term.expect("Next request to")  # '/cont' + Tab became '/context'
        term.expect(PROMPT)
        term.sendline("exit")

    assert run_chat(tmp_path, [], script) == 0


def test_up_and_enter_sends_an_unanswered_message_again(
        tmp_path: Path, openai_server: WireServer) -> None:
    cfg = write_config(tmp_path / "rollchat.yml",
                       "retry:\n  max_retries: 0\n  base_delay: 0.0\n  max_delay: 0.0\n")
    openai_server.push(error(500, "the server fell over"), text("Here is the answer."))
    env = clean_env(tmp_path / "home", OPENAI_API_KEY="sk-test-key-0123456789")

    def script(term: Terminal) -> None:
        term.expect(PROMPT)
        term.sendline("what is a token bucket?")
        term.expect("the server fell over")
        term.expect("Up and Enter")
        term.expect(PROMPT)
        term.send("\x1b[A")  # Up: the message comes back from the input history
        term.send("\r")
        term.expect("Here is the answer.")
        term.expect(PROMPT)
        term.sendline("exit")

    assert run_chat(tmp_path, ["--config", str(cfg), "--base-url",
                                            openai_server.url], script, env=env) == 0
    [path] = (tmp_path / "sessions").glob("*.md")
    turns = parse(path.read_text()).turns
    assert [(t.user, t.status) for t in turns] == [
        ("what is a token bucket?", "unanswered"), ("what is a token bucket?", "ok")]


def test_a_ctrl_c_between_two_prompts_is_one_at_the_prompt(
        tmp_path: Path, monkeypatch) -> None:
    """Right after a prompt ends the terminal is in cooked mode for a moment: a Ctrl-C then
    (a quick second Ctrl-C) is a SIGINT, a KeyboardInterrupt before the next prompt runs. It
    gives a new prompt, as at the prompt, and the chat goes on (it ended the chat)."""
    from rollchat.ui.idle import IdleExtraction

    arm = IdleExtraction.arm
    calls = []

    def arm_then_interrupted(self: IdleExtraction) -> None:
        calls.append(1)
        arm(self)
        if len(calls) == 2:  # the prompt after the first message's answer is being set up
            raise KeyboardInterrupt

    monkeypatch.setattr(IdleExtraction, "arm", arm_then_interrupted)

    def script(term: Terminal) -> None:
        term.expect(PROMPT)
        term.sendline("hi")
        term.expect(r"Time: .*s \\| Tokens")
        term.expect(PROMPT)
        term.sendline("still here")
        term.expect(r"Time: .*s \\| Tokens")
        term.expect(PROMPT)
        term.sendline("exit")

    assert run_chat(tmp_path, [], script) == 0
    assert len(calls) >= 3
    [path] = (tmp_path / "sessions").glob("*.md")
    assert [t.user for t in parse(path.read_text()).turns] == ["hi", "still here"]


def test_a_sigterm_as_enter_is_accepted_ends_the_prompt_then_the_chat(
        tmp_path: Path, monkeypatch) -> None:
    """A SIGTERM that lands while the prompt accepts a line (inside its event loop) ends the
    prompt from within, then the chat, keeping the line: raised inside the loop, it left
    asyncio cancelling the prompt's tasks, and a chat whose terminal had gone (SIGHUP right
    after Enter) hung there for good (found orphaned, never saved, in a py-spy dump)."""
    import os
    import signal

    from rollchat import interrupts
    from rollchat.ui import repl

    for state in ("_received", "_settled", "_deferring"):  # this process's: its own here, so
        monkeypatch.setattr(interrupts, state, [])  # the later chats of this worker go on
    note = repl._Entered.note

    def note_then_signalled(self: repl._Entered, text: str) -> bool:
        accepted = note(self, text)
        if text == "the release is on monday":
            os.kill(os.getpid(), signal.SIGTERM)  # handled here, inside the prompt's loop
        return accepted

    monkeypatch.setattr(repl._Entered, "note", note_then_signalled)

    def script(term: Terminal) -> None:
        term.expect(PROMPT)
        term.sendline("hi")
        term.expect(r"Time: .*s \| Tokens")
        term.expect(PROMPT)
        term.sendline("the release is on monday")
        term.expect("SIGTERM received: saving the session")

    assert run_chat(tmp_path, ["--provider", "offline"], script) == 128 + signal.SIGTERM
    [path] = (tmp_path / "sessions").glob("*.md")
    saved = parse(path.read_text())
    assert [t.user for t in saved.turns] == ["hi", "the release is on monday"]
    assert saved.summary is not None
