"""``ui.notify_after_seconds``: a turn that took longer ends with the terminal's bell, and a
desktop notification where the terminal shows one; never when the output is piped."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console

from rollchat.config.settings import AgentConfig, Config, UIConfig
from rollchat.engine.core import EngineSettings
from rollchat.providers.base import ChatRequest, RetryPolicy, StreamEvent, TextDelta
from rollchat.session.core import Session
from rollchat.storage.in_memory import InMemoryStore
from rollchat.ui.app import ChatApp
from rollchat.ui.bell import bell_bytes, notification, took
from rollchat.ui.render import Renderer
from tests.e2e import PROMPT, clean_env, run_piped, write_config
from tests.terminal import Terminal, run_chat


def test_the_notification_each_terminal_shows() -> None:
    assert notification({"TERM_PROGRAM": "iTerm.app"}, "Done") == ("\x1b]9;Done\x07", "OSC 9")
    assert notification({"TERM_PROGRAM": "tmux", "LC_TERMINAL": "iTerm2"}, "a") == (
        "\x1b]9;a\x07", "OSC 9")  # iTerm2 seen through tmux (and ssh)
    assert notification({"TERM": "foot"}, "Done") == (
        "\x1b]777;notify;rollchat;Done\x07", "OSC 777")
    assert notification({"KITTY_WINDOW_ID": "1"}, "Done") == ("\x1b]99;;Done\x1b\\", "OSC 99")
    assert notification({"TERM": "xterm-256color"}, "Done") == ("", None)
    # nothing the text holds can end the sequence early
    assert notification({"TERM_PROGRAM": "iTerm.app"}, "a\x07b;\x1b]c\nd")[0] == "\x1b]9;ab]cd\x07"


def test_the_bell_alone_or_after_the_notification_and_through_tmux() -> None:
    assert bell_bytes({}, "x") == "\x07"
    assert bell_bytes({"TERM_PROGRAM": "WezTerm"}, "x") == "\x1b]777;notify;rollchat;x\x07\x07"
    assert bell_bytes({"TERM": "foot", "TMUX": "/tmp/t,1,0"}, "x") == (
        "\x1bPtmux;\x1b\x1b]777;notify;rollchat;x\x07\x1b\\\x07")  # the bell itself raw
    assert (took(4.9), took(65), took(3600)) == ("4s", "1m 05s", "60m 00s")


def test_a_long_turn_rings_in_a_terminal(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "rollchat.yml", "ui:\n  notify_after_seconds: 0.001\n")
    env = clean_env(tmp_path / "home", TERM_PROGRAM="iTerm.app")

    def script(term: Terminal) -> None:
        term.expect_exact(PROMPT)
        term.sendline("hello there")
        term.expect(r"\x1b\]9;Assistant answered \(took [0-9]+s\)\x07\x07", raw=True)
        term.expect_exact(PROMPT)
        term.sendline("exit")
        term.expect_exact("Goodbye!")

    assert run_chat(tmp_path, ["--config", str(cfg)], script, env=env) == 0


def test_no_bell_by_default_nor_when_piped(tmp_path: Path) -> None:
    def script(term: Terminal) -> None:
        term.expect_exact(PROMPT, raw=True)
        term.sendline("hello there")
        term.expect_exact("Tokens:", raw=True)  # the answer's footer, then the next prompt
        term.expect_exact(PROMPT, raw=True)
        assert "\x07" not in term.before
        term.sendline("exit")
        term.expect_exact("Goodbye!")

    assert run_chat(tmp_path, [], script,
                    env=clean_env(tmp_path / "home", TERM_PROGRAM="iTerm.app")) == 0
    cfg = write_config(tmp_path / "rollchat.yml", "ui:\n  notify_after_seconds: 0.001\n")
    done = run_piped(tmp_path, "hello there\n", "--config", str(cfg),
                     env=clean_env(tmp_path / "home", TERM_PROGRAM="iTerm.app"))
    assert done.returncode == 0 and "Tokens:" in done.stdout  # answered
    assert "\x07" not in done.stdout + done.stderr and "\x1b" not in done.stdout


class _Stopped:
    """A provider whose answer the user stops with Ctrl-C after its first words (the second
    request, ``stop=False``, answers in full)."""

    name = "offline"

    def __init__(self) -> None:
        self.stop = True

    def stream(self, request: ChatRequest) -> Iterator[StreamEvent]:
        yield TextDelta("Working on it")
        if self.stop and request.purpose == "chat":
            raise KeyboardInterrupt
        yield TextDelta(", done.")


def test_a_turn_stopped_with_ctrl_c_does_not_ring(tmp_path: Path) -> None:
    provider = _Stopped()
    agent = AgentConfig(key="assistant", name="Assistant", provider="offline")
    config = Config(agents={"assistant": agent}, ui=UIConfig(notify_after_seconds=1e-9))
    buffer = io.StringIO()
    renderer = Renderer(Console(file=buffer, width=100, color_system=None, force_terminal=False),
                        interactive=True)
    engine = EngineSettings(provider, model="offline", system="s", max_output_tokens=256,
                            temperature=None, retry=RetryPolicy(0, 0.0, 0.0))
    session = Session(config=config, agent=agent, engine_settings=engine,
                      summary_provider=provider, summary_model="offline",
                      provider_name="offline", store=InMemoryStore(), context_window=128_000,
                      confirm=lambda q: False)
    app = ChatApp(session, renderer)
    app.send("a long question")
    assert "Working on it" in buffer.getvalue()  # the turn ran, and was stopped
    assert "\x07" not in buffer.getvalue()
    provider.stop = False
    app.send("again")  # a turn that ends by itself still rings
    assert buffer.getvalue().endswith("\x07")
