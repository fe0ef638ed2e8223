"""``rollchat show`` piped writes a turn of plain prose itself instead of through rich (rich
costs ~1 ms a turn: minutes for a session of 100,000 turns): the same text as rich draws, at
any width, with every character through the sanitizer, and no rich call per such turn."""

from __future__ import annotations

import io
from datetime import datetime, timezone

import pytest
from rich.console import Console

from rollchat.domain import (
    Note,
    SessionHeader,
    Summary,
    ToolCall,
    ToolResult,
    ToolUse,
    Transcript,
    Turn,
    Usage,
    answer_blocks,
)
from rollchat.domain import Text as TextBlock
from rollchat.ui import show as show_module
from rollchat.ui.render import plain_console
from rollchat.ui.show import session_view, show

WHEN = datetime(2026, 5, 1, 9, 0, 5, tzinfo=timezone.utc)
HEADER = SessionHeader("assistant_20260501_090000_a1a1", WHEN, "Assistant", "agents/a.md",
                       "claude-sonnet-4-5", "anthropic", total_queries=12, total_tokens=4321)
LONG = ("We decided to keep the parser cache index tool as it is, and I'll update the reader "
        "table writer first; then the exporter (the one in src/rollchat) gets the same "
        "treatment: does that work?")


def _turns() -> list[Turn]:
    """Prose turns (short, wrapped, hyphenated, several texts) and turns rich must draw:
    markdown, hostile text, a word wider than the line, tools, a note, an error."""
    said = [
        ("hi", "Hello."),
        ("please make the parser work with the table again. " * 3, LONG),
        ("what about well-known self-referential things?", "Self-referential - yes."),
        ("look \x1b]0;pwned\x07 here \x1b[2J and \u202eevil", "Done."),
        ("bold?", "Use **bold** and `code` here."),
        ("a list", "- one\n- two"),
        ("1. numbered", "1. numbered"),
        ("hostile answer", "see \x1b[2J this"),
        ("a long word", "x" * 100),
        ("spaces", "two  spaces"),
        ("html", "<think>hmm</think> fine"),
        ("unicode", "caf\u00e9 and \u4e2d\u6587"),
    ]
    out = [Turn("query", i + 1, WHEN, user, answer_blocks(reply), elapsed=1.25,
                usage=Usage(1200, 345, 10, 0)) for i, (user, reply) in enumerate(said)]
    call = ToolCall("c1", "read_file", {"path": "a.txt"})
    out += [
        Turn("query", 13, WHEN, "two texts", (TextBlock("First part."), TextBlock(LONG))),
        Turn("query", 14, WHEN, "tools", (ToolUse(call), ToolResult("c1", "line\n" * 20),
                                          TextBlock("Read it."))),
        Turn("query", 15, WHEN, "note", (Note("command", "/compact"), TextBlock("Ok."))),
        Turn("query", 16, WHEN, "failed", (), status="error", error="overloaded"),
        Turn("carried", 1, WHEN, "carried over", answer_blocks("Carried answer.")),
        Turn("restored", 0, WHEN, "", answer_blocks("Restored."), context="Resumed from x"),
        Turn("query", 17, WHEN, "no answer", ()),
    ]
    return out


def _rich_only(t: Transcript) -> str:
    """What ``show`` printed piped before: every part drawn by rich."""
    buffer = io.StringIO()
    plain = plain_console(buffer)
    for part in session_view(t):
        plain.print(part, soft_wrap=False)
    return buffer.getvalue()


@pytest.mark.parametrize("width", [24, 34, 50, 80, 133])
def test_piped_show_prints_exactly_what_rich_printed(
        width: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    t = Transcript(HEADER, tuple(_turns()), Summary(background="A garden.", topics=("x",),
                                                    decisions=(), pending=()))
    written = [turn for turn in t.turns if show_module.prose_turn(turn, "Assistant", width)]
    # the direct path is taken where a turn's title fits on the line (not all fell back)
    assert len(written) >= 5 if width >= 31 else not written
    expected = _rich_only(t)
    show(t, summary_dropped=False, terminal=False)
    out = capsys.readouterr().out
    assert out == expected
    assert "\x1b" not in out and "\u202e" not in out and "^[[2J" in out  # sanitized


def test_a_prose_turn_costs_no_rich_call_and_each_text_is_sanitized(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    prints = {"n": 0}
    sanitized: list[str] = []
    real_print, real_harmless = Console.print, show_module.harmless

    def counted_print(self: Console, *args: object, **kwargs: object) -> None:
        prints["n"] += 1
        real_print(self, *args, **kwargs)  # type: ignore[arg-type]

    def counted_harmless(text: str) -> str:
        sanitized.append(text)
        return real_harmless(text)

    monkeypatch.setattr(Console, "print", counted_print)
    monkeypatch.setattr(show_module, "harmless", counted_harmless)

    def run(count: int) -> tuple[int, int]:
        prints["n"] = 0
        sanitized.clear()
        turns = tuple(Turn("query", i + 1, WHEN, f"question {i} \x07",
                           answer_blocks(f"Answer number {i}."))
                      for i in range(count))
        show(Transcript(HEADER, turns), summary_dropped=False, terminal=False)
        out = capsys.readouterr().out
        assert f"You: question {count - 1} ^G" in out and f"Answer number {count - 1}." in out
        return prints["n"], len(sanitized)

    small, large = run(10), run(1000)
    assert small[0] == large[0]  # rich draws the header and the end, never a prose turn
    assert (small[1], large[1]) == (20, 2000)  # the question and the answer of each turn
