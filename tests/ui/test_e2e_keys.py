"""Keys a user presses, in a pseudo-terminal: Tab completion, and Up+Enter to send again a
message the provider did not answer."""

from __future__ import annotations

from pathlib import Path

import pexpect

from rollchat.storage.transcript import parse
from tests.e2e import PROMPT, clean_env, spawn, write_config
from tests.wire_servers import WireServer, error, openai_server, text

__all__ = ["openai_server"]


def test_tab_completes_a_command(tmp_path: Path) -> None:
    # (the bottom toolbar is not drawn without cursor-position reports, which these tests turn
    # off: its text is tested in test_commands.py, and it was looked at in tmux)
    child = spawn(tmp_path)
    child.expect(PROMPT)
    child.send("/cont")
    child.expect("/cont")  # echoed
    child.send("\t")
    child.expect("ext")  # the completion is drawn (it runs asynchronously: wait for it)
    child.send("\r")
    child.expect("Next request to")  # '/cont' + Tab became '/context'
    child.expect(PROMPT)
    child.sendline("exit")
    child.expect(pexpect.EOF)


def test_up_and_enter_sends_an_unanswered_message_again(tmp_path: Path,
                                                       openai_server: WireServer) -> None:
    cfg = write_config(tmp_path / "rollchat.yml",
                       "retry:\n  max_retries: 0\n  base_delay: 0.0\n  max_delay: 0.0\n")
    openai_server.push(error(500, "the server fell over"), text("Here is the answer."))
    env = clean_env(tmp_path / "home", OPENAI_API_KEY="sk-test-key-0123456789")
    child = spawn(tmp_path, "--config", str(cfg), "--base-url", openai_server.url, env=env)
    child.expect(PROMPT)
    child.sendline("what is a token bucket?")
    child.expect("the server fell over")
    child.expect("Up and Enter")
    child.expect(PROMPT)
    child.send("\x1b[A")  # Up: the message comes back from the input history
    child.send("\r")
    child.expect("Here is the answer.")
    child.expect(PROMPT)
    child.sendline("exit")
    child.expect(pexpect.EOF)
    [path] = (tmp_path / "sessions").glob("*.md")
    turns = parse(path.read_text()).turns
    assert [(t.user, t.status) for t in turns] == [
        ("what is a token bucket?", "unanswered"), ("what is a token bucket?", "ok")]
