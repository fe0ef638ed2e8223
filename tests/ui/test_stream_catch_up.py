"""The live region catches up with text that came in while it was drawn less than 1/15 s ago:
the last words before a pause (a slow model, a tool call being written) are on the screen,
not held until the next chunk."""

from __future__ import annotations

import io
import time

from rich.console import Console

from rollchat.ui.stream import MarkdownStream


def _shown_within(out: io.StringIO, text: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in out.getvalue():
            return True
        time.sleep(0.02)
    return text in out.getvalue()


def test_words_that_came_right_after_a_redraw_are_drawn_before_the_next_chunk() -> None:
    out = io.StringIO()
    stream = MarkdownStream(Console(file=out, force_terminal=True, width=80), live=True)
    try:
        stream.feed("Alpha words ")
        assert _shown_within(out, "Alpha words", 5)
        stream.last_refresh = time.monotonic()  # as if it had just been drawn
        stream.feed("then beta before a pause")  # (within 1/15 s of that draw)
        assert _shown_within(out, "beta before a pause", 10)  # no further chunk comes
    finally:
        stream.close()
    assert out.getvalue().count("▸ thought") == 0


def test_thinking_right_after_a_redraw_is_drawn_before_the_next_chunk() -> None:
    out = io.StringIO()
    stream = MarkdownStream(Console(file=out, force_terminal=True, width=80), live=True)
    try:
        stream.think("first thought ")
        assert _shown_within(out, "first thought", 5)
        stream.last_refresh = time.monotonic()
        stream.think("and the second")
        assert _shown_within(out, "and the second", 10)
    finally:
        stream.close()
    assert "▸ thought for" in out.getvalue()  # folded at the end


def test_nothing_is_drawn_after_close() -> None:
    out = io.StringIO()
    stream = MarkdownStream(Console(file=out, force_terminal=True, width=80), live=True)
    stream.feed("Alpha ")
    stream.last_refresh = time.monotonic()
    stream.feed("omega")
    stream.close()  # prints the block whole
    after = out.getvalue()
    time.sleep(0.3)  # (several catch-up periods: a thread still drawing would write again)
    assert out.getvalue() == after and "Alpha omega" in after
