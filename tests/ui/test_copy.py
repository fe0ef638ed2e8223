"""``copy``: what is copied (the last answer, a code block, the session) and the bytes that carry
it: OSC 52 to the terminal (wrapped again inside tmux) and a local clipboard command."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

from rollchat.domain import Text, Turn
from rollchat.session.state import now
from rollchat.ui import clipboard, commands
from rollchat.ui.copy_command import code_blocks, session_markdown
from tests.e2e import PROMPT, clean_env, write_config
from tests.terminal import Terminal, run_chat
from tests.wire_servers import WireServer, openai_server, text

__all__ = ["openai_server"]

ANSWER = ("Two ways:\n\n```python\nprint('one')\n```\n\nor\n\n~~~sh\necho two\n"
          "```not a fence end\n~~~\n\nDone.")


def test_osc52_and_its_tmux_passthrough() -> None:
    sequence = clipboard.osc52("héllo")
    assert sequence == "\x1b]52;c;" + base64.b64encode("héllo".encode()).decode() + "\x07"
    assert clipboard.terminal_bytes("x", {}) == "\x1b]52;c;eA==\x07"
    assert clipboard.terminal_bytes("x", {"TMUX": "/tmp/tmux-0/default,1,0"}) == (
        "\x1b]52;c;eA==\x07" "\x1bPtmux;\x1b\x1b]52;c;eA==\x07\x1b\\")


def test_the_local_clipboard_command_for_each_desktop() -> None:
    def which(name: str) -> str | None:
        return f"/usr/bin/{name}" if name in ("xsel", "wl-copy", "pbcopy") else None

    assert clipboard.local_command({}, "linux", which) is None  # ssh, no display
    assert clipboard.local_command({"DISPLAY": ":0"}, "linux", which) == [
        "/usr/bin/xsel", "--clipboard", "--input"]  # xclip missing: xsel
    assert clipboard.local_command({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}, "linux",
                                   which) == ["/usr/bin/wl-copy"]
    assert clipboard.local_command({}, "darwin", which) == ["/usr/bin/pbcopy"]


def test_a_failing_clipboard_command_is_said(tmp_path: Path) -> None:
    written: list[str] = []
    went, failed = clipboard.copy("abc", env={}, terminal=written.append,
                                  command=["/bin/false"])
    assert (went, failed, written) == (["the terminal (OSC 52)"], ["false: exit status 1"],
                                       ["\x1b]52;c;YWJj\x07"])
    went, failed = clipboard.copy("abc", env={}, terminal=None,
                                  command=[str(tmp_path / "missing")])
    assert went == [] and failed[0].startswith("missing: ")


def test_code_blocks_and_the_session_as_markdown() -> None:
    assert code_blocks(ANSWER) == ["print('one')", "echo two\n```not a fence end"]
    assert code_blocks("```\nunclosed\nto the end") == ["unclosed\nto the end"]
    assert code_blocks("no code") == []
    turns = [Turn("restored", 0, now(), "", (Text("Ready."),), context="Resumed from a_1"),
             Turn("query", 1, now(), "hi", (Text("Hello!"),))]
    assert session_markdown(turns, "Helper") == (
        "*Resumed from a_1*\n\n**Helper:** Ready.\n\n**You:** hi\n\n**Helper:** Hello!\n")


def test_copy_words_that_are_chat() -> None:
    def name(line: str) -> str | None:
        parsed = commands.parse(line)
        return None if parsed is None or isinstance(parsed, commands.Unknown) else \
            f"{parsed[0].name}:{parsed[1]}"

    assert name("copy") == "copy:"
    assert name("copy code 2") == "copy:code 2"
    assert name("copy all") == "copy:all"
    assert name("copy this function into utils.py") is None
    assert name("/copy everything") == "copy:everything"  # (then refused with its usage)


def test_copy_in_a_terminal_sends_osc52_and_runs_the_clipboard_command(
        tmp_path: Path, openai_server: WireServer) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "xclip"
    fake.write_text('#!/bin/sh\n[ "$*" = "-selection clipboard" ] || exit 3\n'
                    'cat > "$CLIP_OUT"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    clip = tmp_path / "clip.txt"
    openai_server.push(text(ANSWER))
    cfg = write_config(tmp_path / "rollchat.yml", "retry:\n  max_retries: 0\n")
    env = clean_env(tmp_path / "home", OPENAI_API_KEY="sk-test-key-0123456789",
                    DISPLAY=":0", CLIP_OUT=str(clip), TMUX="/tmp/tmux-1/default,1,0",
                    PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    env.pop("WAYLAND_DISPLAY", None)

    def script(term: Terminal) -> None:
        term.expect_exact(PROMPT)
        term.sendline("copy")
        term.expect_exact("nothing to copy: no answer yet in this session")
        term.expect_exact(PROMPT)
        term.sendline("show me two ways")
        term.expect_exact("Done.")
        term.expect_exact(PROMPT)
        term.sendline("copy code 2")
        encoded = base64.b64encode(b"echo two\n```not a fence end").decode()
        term.expect_exact(f"\x1b]52;c;{encoded}\x07", raw=True)  # the terminal's own
        term.expect_exact(f"\x1bPtmux;\x1b\x1b]52;c;{encoded}\x07\x1b\\",
                          raw=True)  # tmux passthrough
        term.expect_exact("Copied code block 2 of 2 (27 characters) through the terminal "
                          "(OSC 52) and xclip.")
        assert clip.read_text() == "echo two\n```not a fence end"
        term.expect_exact(PROMPT)
        term.sendline("copy code 3")
        term.expect_exact("the last answer has 2 code blocks: copy code 1..2")
        term.expect_exact(PROMPT)
        term.sendline("exit")
        term.expect_exact("Goodbye!")

    assert run_chat(tmp_path, ["--config", str(cfg), "--base-url",
                                            openai_server.url], script, env=env) == 0
