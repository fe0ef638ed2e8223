"""Issue 35, item 1: no question ends the chat. Ctrl-D at any question rollchat asks answers
its safe answer (no, later: the answer given without a terminal), says so, and the turn in
progress goes on whole: the tool approval in a chat (as a terminal runs it, in process:
tests/terminal.py), every other question in process through prompt_toolkit's own input."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from rollchat.cli import memory_intake
from rollchat.cli import prune as prune_cli
from rollchat.storage.transcript import parse
from rollchat.ui.approve import confirmer, terminal_asker, terminal_compact_asker, yes_or_no
from rollchat.ui.render import Renderer
from tests.e2e import PROMPT, run_piped, write_config
from tests.terminal import Terminal, run_chat

CTRL_D = "\x04"


def _renderer() -> tuple[Renderer, io.StringIO]:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, color_system=None, width=200)
    return Renderer(console, interactive=True), buf


@pytest.fixture()
def keys() -> Iterator[PipeInput]:
    """The terminal's keyboard: text sent to it is what prompt_toolkit reads next."""
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        yield pipe


def test_ctrl_d_at_the_tool_approval_refuses_the_call_and_the_chat_goes_on(tmp_path: Path) -> None:
    made = run_piped(tmp_path, "", "init-agent", "helper.py")
    assert made.returncode == 0, made.stderr
    write_config(tmp_path / "rollchat.yml", "ui:\n  offline_word_delay: 0\n")

    def script(term: Terminal) -> None:
        term.expect_exact(PROMPT)
        term.sendline('use word_count on "one two three"')
        term.expect(r"\[y/a/n, Enter\]:")
        term.send(CTRL_D)  # was: "Aborted!", exit 1, the turn lost
        term.expect_exact("Ctrl-D: no.")
        term.expect_exact(PROMPT)  # the turn finished; the chat asks for the next message
        term.sendline("thanks")
        term.expect_exact(PROMPT)
        term.sendline("exit")
        term.expect_exact("Goodbye!")  # after the summary

    assert run_chat(tmp_path, ["--config", str(tmp_path / "rollchat.yml"),
                                            "helper.py"], script) == 0
    [path] = (tmp_path / "sessions").glob("*.md")
    saved = parse(path.read_text(encoding="utf-8"))
    assert saved.summary is not None
    assert [t.user for t in saved.turns] == ['use word_count on "one two three"', "thanks"]
    [exchange] = saved.turns[0].tools  # the call and its refusal, kept with the turn
    assert exchange.call.name == "word_count" and exchange.is_error
    assert "3 words" not in exchange.result


def test_ctrl_d_at_the_tool_approval_is_no(keys: PipeInput) -> None:
    from rollchat.domain import ToolCall
    from rollchat.providers.base import ToolSpec
    from rollchat.tools import Tool

    out, buf = _renderer()
    tool = Tool(ToolSpec("word_count", "count"), run=lambda _: "3")
    keys.send_text(CTRL_D)
    assert terminal_asker(out)(ToolCall("c1", "word_count", {"text": "a b"}), tool) == "n"
    assert "Ctrl-D: no." in buf.getvalue()


def test_ctrl_d_at_the_compaction_question_is_later(keys: PipeInput) -> None:
    out, buf = _renderer()
    keys.send_text(CTRL_D)
    assert terminal_compact_asker(out)("The context is 90% full. Compact now?") == "later"
    assert "Ctrl-D: later." in buf.getvalue()


@pytest.mark.parametrize(("question", "safe"), [
    ("Session 3 is open in another rollchat process. Continue? (y/n) ", False),
    ("The edited summary cannot be used: no Goal. Edit it again? (y/n) ", False),
    ("Summarizing its 900 turns with gpt-4o takes about 1M tokens; without it it is "
     "summarized locally. Continue? (y/n) ", False),
    ("Session 4 (x) was continued in session 1 (y). Resume 1 instead? (Y/n) ", True),
])
def test_ctrl_d_at_a_session_question_is_its_default(keys: PipeInput, question: str,
                                                     safe: bool) -> None:
    out, buf = _renderer()
    keys.send_text(CTRL_D)
    assert confirmer(out, yes=False, interactive=True)(question) is safe
    assert f"Ctrl-D: {'yes' if safe else 'no'}." in buf.getvalue()


def test_ctrl_d_at_a_commands_question_is_no_and_ctrl_c_interrupts(keys: PipeInput) -> None:
    out, _ = _renderer()
    keys.send_text(CTRL_D)
    assert yes_or_no("Delete this session?", out) is False
    keys.send_text("\x03")
    with pytest.raises(KeyboardInterrupt):
        yes_or_no("Delete this session?", out)


def _a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)


def test_ctrl_d_at_prune_deletes_nothing(keys: PipeInput, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    _a_terminal(monkeypatch)
    keys.send_text(CTRL_D)
    with pytest.raises(typer.Exit) as ended:
        prune_cli._go_ahead([object()], dry_run=False, yes=False)  # type: ignore[list-item]
    assert ended.value.exit_code == 1
    assert "Nothing deleted." in capsys.readouterr().out


def test_ctrl_d_at_memory_prune_changes_nothing(keys: PipeInput,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _a_terminal(monkeypatch)
    out, buf = _renderer()
    keys.send_text(CTRL_D)
    assert memory_intake.go_ahead(out, dry_run=False, yes=False, listed="2 to prune",
                                  refusal="2 facts would be forgotten",
                                  question="Forget these 2 facts for good?") is False
    assert "Nothing changed." in buf.getvalue()


def test_ctrl_d_at_memory_edits_question_discards(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # end of input at once
    assert memory_intake.ask("Edit again (e) or discard your changes (d)? [e/d] ") == "d"
