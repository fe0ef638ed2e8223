"""``show`` in a terminal writes the common parts of a turn itself (``ui/styled_show.py``):
the bytes are exactly what rich writes for them, escape codes included, for generated
answers, lines and titles at many widths and in every colour system; anything else (code,
tables, hostile text) still goes to rich, and bidi or C1 controls never reach the screen."""

from __future__ import annotations

import io
import random
import re
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from rollchat.domain import (
    Note,
    SessionHeader,
    Thinking,
    ToolCall,
    ToolResult,
    ToolUse,
    Transcript,
    Turn,
    Usage,
)
from rollchat.domain import Text as TextBlock
from rollchat.ui import show as show_module
from rollchat.ui.show import show
from rollchat.ui.stream import markdown
from rollchat.ui.styled_show import Palette, styled_part, styled_turn
from tests.markdown_docs import document

_LINK_ID = re.compile(r"id=\d+")  # rich numbers each hyperlink at random: not the output
WIDTHS = [20, 31, 40, 57, 80, 120]
WORDS = ["parser", "cache", "a", "I", "it's", "(x)", "x,", "end.", "src/m.py", "well-known",
         "42", "q?", '"hi"', "a:b", "0x1f", "True", "1.5e3", "10.0.0.1"]
WHEN = datetime(2026, 5, 1, 9, 0, 5, tzinfo=timezone.utc)


def _console(width: int, colours: str) -> Console:
    if colours == "no_color":
        return Console(file=io.StringIO(), force_terminal=True, width=width,
                       color_system="truecolor", no_color=True)
    return Console(file=io.StringIO(), force_terminal=True, width=width,
                   color_system=colours)  # type: ignore[arg-type]


COLOURS = ["truecolor", "256", "standard", "no_color"]


def _rich(part: object, console: Console) -> str:
    with console.capture() as captured:
        console.print(part)
    return captured.get()


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def test_markdown_written_directly_is_what_rich_writes() -> None:
    rng = random.Random(40)
    written = 0
    for _ in range(800):
        markup, width, colours = document(rng, WORDS, 14), rng.choice(WIDTHS), rng.choice(COLOURS)
        console = _console(width, colours)
        text = styled_part(markdown(markup), width, Palette(console))
        if text is not None:
            written += 1
            assert text == _rich(markdown(markup), console), (markup, width, colours)
    assert written > 150  # the direct path was taken, not only declined


def test_lines_and_titles_written_directly_are_what_rich_writes() -> None:
    rng = random.Random(41)
    written = rules = 0
    for _ in range(200):
        width, colours = rng.choice(WIDTHS), rng.choice(COLOURS)
        console = _console(width, colours)
        palette = Palette(console)
        line = _words(rng, rng.randint(1, 20))
        number = rng.choice([1, 7, 10, 99, 100, 1234, 270000])
        started = WHEN + timedelta(days=rng.randint(-4000, 4000), seconds=rng.randint(0, 86400))
        kind = rng.choice(["Query", "Carried over", "Session restored", "Handed off"])
        title = (f"{kind} {number}" if kind in ("Query", "Carried over") else kind) + \
            f" · {started:%Y-%m-%d %H:%M:%S}"
        parts = [Text(line, style=rng.choice(["dim", "bold green", "red dim", "yellow"])),
                 Text(f"{line}\n{_words(rng, 3)}", style="dim"),
                 Text.assemble(("You: ", "bold cyan"), line),
                 Text(""),
                 Rule(title, style="cyan", align="left")]
        for part in parts:
            text = styled_part(part, width, palette)
            if text is not None:
                written += 1
                rules += isinstance(part, Rule)
                assert text == _rich(part, console), (part, width, colours)
    assert written > 700 and rules > 100


@pytest.mark.parametrize("markup", [
    "```python\nx = 1\n```", "| a | b |\n| --- | --- |\n| 1 | 2 |", "# Title", "*em*",
    "evil \u202e text", "see \x1b[2J this", "caf\u00e9", "a word wider than the line: " +
    "x" * 130, "[a](https://example.com)", "> quoted",
])
def test_what_needs_rich_is_left_to_it(markup: str) -> None:
    assert styled_part(markdown(markup), 120, Palette(_console(120, "truecolor"))) is None


def _turns(rng: random.Random, count: int) -> Iterator[Turn]:
    """Turns of every kind ``show`` draws: prose (written whole), simple markdown, tool
    calls and results, notes, thinking, failures, code and tables (rich), and hostile text."""
    hostile = ["evil \u202egnp.exe", "csi \x9b31m red", "esc \x1b]0;title\x07", "nul \x00 x",
               "lrm \u200e x", "crlf\r\nline"]
    for i in range(count):
        r = rng.random()
        user = f"please make the {_words(rng, rng.randint(1, 9))} work."
        if r < 0.1:
            user += " " + rng.choice(hostile)
        blocks: list[object] = []
        kind = "query"
        status = "ok"
        if r < 0.35:
            blocks.append(TextBlock(f"We decided to keep the {_words(rng, rng.randint(1, 30))}."))
        elif r < 0.5:
            blocks.append(TextBlock(document(rng, WORDS, 14)))
        elif r < 0.6:
            call = ToolCall(f"c{i}", "read_file", {"path": f"src/m{i}.py"})
            blocks += [ToolUse(call), ToolResult(f"c{i}", f"line one\n{_words(rng, 12)}",
                                                 is_error=rng.random() < 0.3),
                       TextBlock(f"Read it: **two** lines, {_words(rng, 4)}.")]
        elif r < 0.7:
            blocks += [Thinking(f"thinking about {_words(rng, 5)}"),
                       Note("retry", f"it failed {_words(rng, 3)}"),
                       TextBlock(_words(rng, 8))]
        elif r < 0.8:
            blocks.append(TextBlock(rng.choice([
                "```python\ndef f(x):\n    return x\n```", "| a | b |\n| --- | --- |\n| 1 | 2 |",
                "# Heading\n\nText *em* and [a link](https://example.com)."])))
        elif r < 0.9:
            blocks.append(TextBlock(f"{rng.choice(hostile)} in the answer {_words(rng, 5)}"))
            if rng.random() < 0.5:
                blocks.append(ToolResult("x", rng.choice(hostile)))
        else:
            kind = rng.choice(["carried", "handoff", "restored"])
            status = rng.choice(["ok", "error", "interrupted"])
            blocks.append(TextBlock(_words(rng, 10)))
        yield Turn(kind, i + 1, WHEN + timedelta(seconds=i * 97), user,  # type: ignore[arg-type]
                   tuple(blocks), elapsed=rng.random() * 9, context="the context " + str(i),
                   usage=Usage(rng.randint(1, 200000), rng.randint(1, 9000)), status=status,
                   error="it broke" if status == "error" else "")


def _shown(session: Transcript, monkeypatch: pytest.MonkeyPatch, *, direct: bool) -> str:
    if not direct:  # everything through rich, as ``show`` drew it before
        monkeypatch.setattr(show_module, "styled_turn", lambda *a: None)
        monkeypatch.setattr(show_module, "styled_part", lambda *a: None)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    show(session, terminal=True)
    monkeypatch.undo()
    return out.getvalue()


@pytest.mark.parametrize(("width", "colours"), [(40, "truecolor"), (80, "256"),
                                                (133, "truecolor"), (57, "no_color")])
def test_a_session_in_a_terminal_is_what_rich_drew(width: int, colours: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    header = SessionHeader("assistant_20260501_090000_a1a1", WHEN, "Assistant", "agents/a.md",
                           "offline-model", "offline", total_queries=160)
    session = Transcript(header, list(_turns(random.Random(width), 160)))

    def terminal() -> None:
        monkeypatch.setenv("PAGER", " ")  # drawn to stdout, no pager
        monkeypatch.setenv("FORCE_COLOR", "1")
        monkeypatch.setenv("COLUMNS", str(width))
        monkeypatch.delenv("NO_COLOR", raising=False)
        if colours == "no_color":
            monkeypatch.setenv("NO_COLOR", "1")
        monkeypatch.setenv("TERM", "xterm-256color")
        if colours == "truecolor":
            monkeypatch.setenv("COLORTERM", "truecolor")
        else:
            monkeypatch.delenv("COLORTERM", raising=False)

    calls = {"turn": 0, "part": 0}

    def counted(name: str, real: object) -> object:
        def wrapper(*args: object) -> object:
            found = real(*args)  # type: ignore[operator]
            calls[name] += found is not None
            return found
        return wrapper

    terminal()
    monkeypatch.setattr(show_module, "styled_turn", counted("turn", styled_turn))
    monkeypatch.setattr(show_module, "styled_part", counted("part", styled_part))
    ours = _shown(session, monkeypatch, direct=True)
    terminal()
    theirs = _shown(session, monkeypatch, direct=False)
    assert calls["turn"] > 25 and calls["part"] > 150  # written directly, not only declined
    assert "\x1b[" in ours and "Query " in ours
    assert "<U+202E>" in ours and "\\x9b" in ours and "^[" in ours
    for raw in ("\u202e", "\x9b", "\x1b]0;title", "\u200e", "\x00", "\r"):
        assert raw not in ours
    assert _LINK_ID.sub("id=", ours) == _LINK_ID.sub("id=", theirs)
