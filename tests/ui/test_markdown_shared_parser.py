"""``markdown`` parses with one parser per thread instead of rich's new parser per text (most
of ``show``'s time on a big session): what it draws is byte for byte what rich's own
Markdown draws (with HTML read as text, as before), for a session of every kind of block."""

from __future__ import annotations

import io
import re
import threading
from datetime import datetime, timezone

import pytest
from markdown_it import MarkdownIt
from rich.console import Console
from rich.markdown import Markdown

from rollchat.domain import SessionHeader, ToolCall, ToolResult, ToolUse, Transcript, Turn, Usage
from rollchat.domain import Text as TextBlock
from rollchat.ui import show as show_module
from rollchat.ui.show import session_view
from rollchat.ui.stream import markdown

_LINK_ID = re.compile(r"id=\d+")  # rich numbers each hyperlink at random: not the output
WHEN = datetime(2026, 5, 1, 9, 0, 5, tzinfo=timezone.utc)
HEADER = SessionHeader("assistant_20260501_090000_a1a1", WHEN, "Assistant", "agents/a.md",
                       "claude-sonnet-4-5", "anthropic", total_queries=9)
ANSWERS = [
    "# A heading\n\nSome *emphasis*, **bold**, ~~struck~~ and `code`.\n\n## Smaller\n\nText.",
    "```python\ndef f(x: int) -> int:\n    return x * 2\n```\n\nAnd ~~~ fences:\n\n~~~\nplain\n~~~",
    "| name | size |\n| --- | ---: |\n| a.txt | 12 |\n| b.md | 3,400 |\n\nA table.",
    "- one\n- two\n  - nested\n\n1. first\n2. second\n\n> a quote\n> on two lines",
    "Plain prose with no markup at all, long enough to wrap at the width of the console here.",
    "<think>\nhidden?\n</think>\nAnswer after an HTML block, a [link](https://example.com).",
    "Line one  \nhard break, then a rule:\n\n---\n\n![an image](x.png) and <kbd>Ctrl</kbd>.",
]


def _session() -> Transcript:
    turns = [Turn("query", i + 1, WHEN, f"question {i}", (TextBlock(text),), elapsed=1.0,
                  usage=Usage(100, 20)) for i, text in enumerate(ANSWERS)]
    call = ToolCall("c1", "read_file", {"path": "a.txt"})
    turns.append(Turn("query", len(turns) + 1, WHEN, "tools",
                      (ToolUse(call), ToolResult("c1", "line one\nline two"),
                       TextBlock("Read it: **two** lines."))))
    return Transcript(HEADER, turns)


def _rich_markdown(text: str) -> Markdown:
    """rich's own Markdown, its text parsed again with HTML read as text (what ``markdown``
    did before it shared a parser)."""
    shown = Markdown(text)
    shown.parsed = MarkdownIt("commonmark", {"html": False}).enable(
        ["strikethrough", "table"]).parse(text)
    return shown


def _drawn(width: int) -> tuple[str, str]:
    """The session as a colour terminal gets it, and its text."""
    console = Console(record=True, file=io.StringIO(), width=width, force_terminal=True,
                      color_system="truecolor")
    for part in session_view(_session()):
        console.print(part)
    styled = console.export_text(styles=True, clear=False)
    return _LINK_ID.sub("id=", styled), console.export_text()


@pytest.mark.parametrize("width", [40, 80, 133])
def test_show_draws_what_rich_s_own_markdown_draws(width: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    ours, text = _drawn(width)
    monkeypatch.setattr(show_module, "markdown", _rich_markdown)
    theirs, _ = _drawn(width)
    assert all(seen in text for seen in ("A heading", "def f", "3,400", "nested", "<think>",
                                         "Plain prose", "read_file", "struck"))
    assert ours == theirs


def test_it_is_rich_s_markdown_with_the_same_state() -> None:
    text = ANSWERS[0]
    ours, theirs = markdown(text), _rich_markdown(text)
    assert isinstance(ours, Markdown)
    assert "parsed" not in vars(ours)  # parsed when first drawn (never, when show writes it)
    assert ours.parsed
    assert vars(ours).keys() == vars(theirs).keys()  # rich gained a field: set it too
    for name in vars(theirs):
        if name != "parsed":
            assert getattr(ours, name) == getattr(theirs, name), name
    assert [t.as_dict() for t in ours.parsed] == [t.as_dict() for t in theirs.parsed]


def test_the_parser_is_made_once_per_thread() -> None:
    first, second = markdown("a"), markdown("b")
    assert type(first) is type(second)
    seen: list[str] = []
    worker = threading.Thread(target=lambda: seen.append(markdown("*c*").parsed[1].content))
    worker.start()
    worker.join(timeout=30)
    assert seen == ["*c*"]
