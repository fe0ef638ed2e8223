"""Rendering as strings: streamed markdown, control characters, notices."""

from __future__ import annotations

import io
from datetime import datetime, timezone

from rich.console import Console

from rollchat.domain import Turn, Usage
from rollchat.render import MarkdownStream, Renderer, harmless, human_tokens, usage_line


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=False, color_system=None, width=80), buf


def test_harmless_neutralises_escape_sequences() -> None:
    hostile = "a\x1b[2J\x1b]52;c;ZXZpbA==\x07b\x9b31mc\ttab\nline"
    shown = harmless(hostile)
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert "^[" in shown and "^G" in shown and "\\x9b" in shown
    assert "\ttab\nline" in shown


def test_stream_prints_each_block_once_and_keeps_code_fences_whole() -> None:
    console, buf = _console()
    stream = MarkdownStream(console, live=False)
    text = "First paragraph.\n\n```python\nx = 1\n\ny = 2\n```\n\nLast *words*."
    for ch in text:
        stream.feed(ch)
    stream.close()
    out = buf.getvalue()
    assert out.count("First paragraph.") == 1
    assert "x = 1" in out and "y = 2" in out and out.count("Last words.") == 1
    assert "\x1b" not in out


def test_stream_flushes_completed_blocks_before_the_end() -> None:
    console, buf = _console()
    stream = MarkdownStream(console, live=False)
    stream.feed("Block one.\n\nBlock tw")
    assert "Block one." in buf.getvalue() and "Block tw" not in buf.getvalue()
    stream.close()
    assert "Block tw" in buf.getvalue()


def test_answer_with_escape_codes_is_printed_harmlessly() -> None:
    console, buf = _console()
    r = Renderer(console, interactive=False)
    r.answer_start("Assistant")
    r.answer_delta("title\x1b]0;pwned\x07 here")
    turn = Turn("query", 1, datetime.now(timezone.utc), "q", "x", usage=Usage(5, 7),
                elapsed=1.25)
    r.answer_end(turn)
    out = buf.getvalue()
    assert "\x1b" not in out and "\x07" not in out and "^[]0;pwned^G" in out
    assert "Tokens: 12 (in: 5, out: 7)" in out


def test_interrupted_and_unanswered_notices() -> None:
    console, buf = _console()
    r = Renderer(console, interactive=False)
    now = datetime.now(timezone.utc)
    for status in ("interrupted", "unanswered"):
        r.answer_start("A")
        r.answer_end(Turn("query", 1, now, "q", "", status=status,  # type: ignore[arg-type]
                          error="rate limited: slow down"))
    out = buf.getvalue()
    assert "interrupted" in out and "rate limited: slow down" in out and "Up and Enter" in out


def test_figures() -> None:
    assert human_tokens(999) == "999" and human_tokens(2300) == "2.3K"
    assert human_tokens(200_000) == "200K" and human_tokens(1_500_000) == "1.5M"
    assert usage_line(3.21, Usage(123, 222)) == "Time: 3.2s | Tokens: 345 (in: 123, out: 222)"
    assert "cache read: 5" in usage_line(1, Usage(1, 1, cache_read_tokens=5))
